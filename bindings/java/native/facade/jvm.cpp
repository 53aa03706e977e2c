#include "jvm.h"

#include <pthread.h>

#include <cstdio>
#include <cstring>
#include <new>

namespace {

JavaVM *g_vm = nullptr;
jclass g_exception_class = nullptr;  // org.mq.MqException (a global reference)
jmethodID g_exception_create = nullptr;
jmethodID g_from_native = nullptr;  // MqException.fromNative(byte[]): Java's UTF-8 decoder
jclass g_async_class = nullptr;  // org.mq.AsyncCall (a global reference: keeps its method ID valid)
jmethodID g_async_finish = nullptr;

pthread_key_t g_detach_key;

void detach_thread(void *vm) { static_cast<JavaVM *>(vm)->DetachCurrentThread(); }

// The typemaps run outside the wrapper's try block: they report, never throw.
bool out_of_memory(JNIEnv *env, const char *what) {
    char text[96];
    int n = snprintf(text, sizeof text, "no memory to copy %s for the native call", what);
    mqj::throw_java(env, 19 /* MQ_ERR_NO_MEMORY */, text, static_cast<size_t>(n));
    return false;
}

}  // namespace

extern "C" JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *) {
    g_vm = vm;
    JNIEnv *env = nullptr;
    if (vm->GetEnv(reinterpret_cast<void **>(&env), JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
    jclass local = env->FindClass("org/mq/MqException");
    if (!local) return JNI_ERR;
    g_exception_class = static_cast<jclass>(env->NewGlobalRef(local));
    env->DeleteLocalRef(local);
    g_exception_create = env->GetStaticMethodID(g_exception_class, "create",
                                                "(ILjava/lang/String;)Lorg/mq/MqException;");
    g_from_native =
        env->GetStaticMethodID(g_exception_class, "fromNative", "([B)Ljava/lang/String;");
    if (!g_exception_class || !g_exception_create || !g_from_native) return JNI_ERR;
    jclass async = env->FindClass("org/mq/AsyncCall");
    if (!async) return JNI_ERR;
    g_async_class = static_cast<jclass>(env->NewGlobalRef(async));
    env->DeleteLocalRef(async);
    g_async_finish = env->GetMethodID(g_async_class, "finish", "(IJJLjava/nio/ByteBuffer;[BZ)V");
    if (!g_async_class || !g_async_finish) return JNI_ERR;
    if (pthread_key_create(&g_detach_key, detach_thread) != 0) return JNI_ERR;
    return JNI_VERSION_1_8;
}

namespace mqj {

JavaVM *jvm() { return g_vm; }

jmethodID async_finish() { return g_async_finish; }

JNIEnv *attach_current_thread(const char *name) {
    JNIEnv *env = nullptr;
    jint st = g_vm->GetEnv(reinterpret_cast<void **>(&env), JNI_VERSION_1_8);
    if (st == JNI_OK) return env;
    if (st != JNI_EDETACHED) return nullptr;
    JavaVMAttachArgs args;
    args.version = JNI_VERSION_1_8;
    args.name = const_cast<char *>(name);
    args.group = nullptr;
    // A daemon: the JVM's exit never waits for a library thread. The key's destructor runs
    // when the thread ends and detaches it, so the JVM forgets it.
    if (g_vm->AttachCurrentThreadAsDaemon(reinterpret_cast<void **>(&env), &args) != JNI_OK) {
        return nullptr;
    }
    pthread_setspecific(g_detach_key, g_vm);
    return env;
}

void after_director_delete() {
    JNIEnv *env = nullptr;
    if (g_vm->GetEnv(reinterpret_cast<void **>(&env), JNI_VERSION_1_8) == JNI_OK &&
        env->ExceptionCheck()) {
        env->ExceptionClear();
    }
}

void throw_java(JNIEnv *env, int status, const char *message, size_t len) {
    if (env->ExceptionCheck()) return;  // one already pending says more
    jstring text = make_jstring(env, message, len);
    if (!text) return;  // OutOfMemoryError pending
    jobject ex = env->CallStaticObjectMethod(g_exception_class, g_exception_create,
                                             static_cast<jint>(status), text);
    env->DeleteLocalRef(text);
    if (ex && !env->ExceptionCheck()) env->Throw(static_cast<jthrowable>(ex));
    if (ex) env->DeleteLocalRef(ex);
}

jstring make_jstring(JNIEnv *env, const char *text, size_t len) {
    const auto n = static_cast<jsize>(len);
    jbyteArray bytes = env->NewByteArray(n);
    if (!bytes) return nullptr;  // OutOfMemoryError pending
    env->SetByteArrayRegion(bytes, 0, n, reinterpret_cast<const jbyte *>(text));
    auto *s =
        static_cast<jstring>(env->CallStaticObjectMethod(g_exception_class, g_from_native, bytes));
    env->DeleteLocalRef(bytes);
    return env->ExceptionCheck() ? nullptr : s;
}

bool JBytes::load(JNIEnv *env, jbyteArray a) {
    null_ = a == nullptr;
    size_ = 0;
    if (null_) return true;
    const jsize n = env->GetArrayLength(a);
    size_ = static_cast<size_t>(n);
    if (size_ > sizeof small_) {
        big_.reset(new (std::nothrow) char[size_]);
        if (!big_) return out_of_memory(env, "a byte array argument");
        data_ = big_.get();
    }
    env->GetByteArrayRegion(a, 0, n, reinterpret_cast<jbyte *>(data_));  // in bounds: cannot throw
    return true;
}

}  // namespace mqj
