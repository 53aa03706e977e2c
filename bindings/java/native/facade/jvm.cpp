#include "jvm.h"

#include <pthread.h>

#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

namespace {

JavaVM *g_vm = nullptr;
jclass g_exception_class = nullptr;  // org.mq.MqException (a global reference)
jmethodID g_exception_create = nullptr;

pthread_key_t g_detach_key;

void detach_thread(void *vm) { static_cast<JavaVM *>(vm)->DetachCurrentThread(); }

// Appends the UTF-16 of one code point.
void put_code_point(std::vector<jchar> &out, uint32_t cp) {
    if (cp >= 0x10000) {
        cp -= 0x10000;
        out.push_back(static_cast<jchar>(0xD800 + (cp >> 10)));
        out.push_back(static_cast<jchar>(0xDC00 + (cp & 0x3FF)));
    } else {
        out.push_back(static_cast<jchar>(cp));
    }
}

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
    if (!g_exception_class || !g_exception_create) return JNI_ERR;
    if (pthread_key_create(&g_detach_key, detach_thread) != 0) return JNI_ERR;
    return JNI_VERSION_1_8;
}

namespace mqj {

JavaVM *jvm() { return g_vm; }

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

jstring make_jstring(JNIEnv *env, const char *text, size_t len) try {
    const auto *s = reinterpret_cast<const unsigned char *>(text);
    std::vector<jchar> out;
    out.reserve(len);
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        uint32_t cp = 0;
        size_t n = 0;
        if (c < 0x80) {
            cp = c, n = 1;
        } else if ((c & 0xE0) == 0xC0) {
            cp = c & 0x1F, n = 2;
        } else if ((c & 0xF0) == 0xE0) {
            cp = c & 0x0F, n = 3;
        } else if ((c & 0xF8) == 0xF0) {
            cp = c & 0x07, n = 4;
        }
        bool ok = n > 0 && i + n <= len;
        for (size_t k = 1; ok && k < n; ++k) {
            ok = (s[i + k] & 0xC0) == 0x80;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        // Overlong forms, surrogates and values past U+10FFFF are not UTF-8 either.
        static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
        ok = ok && cp >= kMin[n] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
        if (!ok) {
            out.push_back(0xFFFD);
            ++i;
            continue;
        }
        put_code_point(out, cp);
        i += n;
    }
    return env->NewString(out.data(), static_cast<jsize>(out.size()));
} catch (const std::bad_alloc &) {
    jclass oom = env->FindClass("java/lang/OutOfMemoryError");
    if (oom) env->ThrowNew(oom, "no memory for a string from the native library");
    return nullptr;
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
