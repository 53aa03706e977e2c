// The facade's link to the JVM: the cached JavaVM, attaching library threads, throwing the
// binding's exceptions, and moving names, bytes and text across JNI without surprises.
#pragma once

#include <jni.h>

#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <memory>
#include <string>

// A java.nio.ByteBuffer (direct) handed to Java; its own name so SWIG can map it.
typedef jobject jbytebuffer;
// An org.mq.AsyncCall handed to the native side (its own name so SWIG can map it).
typedef jobject jasynccall;

#ifndef SWIG
namespace mqj {

// The JVM that loaded the library (set by JNI_OnLoad).
JavaVM *jvm();

// The calling thread's JNIEnv. A library thread is attached as a daemon (so it never holds up
// the JVM's exit) under `name`, and detached when it ends. nullptr if the JVM refuses.
JNIEnv *attach_current_thread(const char *name);

// After deleting a SWIG director: its destructor calls back into Java (swigDirectorDisconnect)
// and does not check for an exception afterwards; checking here keeps the next JNI call legal
// (-Xcheck:jni reports it otherwise). A throw from that Java method is dropped.
void after_director_delete();

template <typename Director>
void delete_director(Director *d) {
    delete d;
    after_director_delete();
}

// org.mq.AsyncCall.finish(int, long, long, ByteBuffer, byte[], boolean), looked up at load.
jmethodID async_finish();

// Throws org.mq.MqException.create(status, message) in env; the caller then returns to Java.
void throw_java(JNIEnv *env, int status, const char *message, size_t len);

// A Java String from bytes that should be UTF-8 (the library's names and messages), decoded
// by Java (malformed bytes become U+FFFD): NewStringUTF's modified UTF-8 must never see
// arbitrary bytes. nullptr with an exception pending if the JVM has no memory for it.
jstring make_jstring(JNIEnv *env, const char *text, size_t len);
inline jstring make_jstring(JNIEnv *env, const std::string &s) {
    return make_jstring(env, s.data(), s.size());
}

// A name argument from org.mq.Names: the address of a NUL-terminated native string; with the
// low bit set, a copy made for this call, freed when the call returns (on every path).
class NameArg {
public:
    NameArg() = default;
    NameArg(const NameArg &) = delete;
    NameArg &operator=(const NameArg &) = delete;
    ~NameArg() {
        if (temporary_) std::free(temporary_);
    }
    const char *take(jlong handle) {
        char *p = reinterpret_cast<char *>(static_cast<intptr_t>(handle & ~static_cast<jlong>(1)));
        if (handle & 1) temporary_ = p;
        return p;
    }

private:
    char *temporary_ = nullptr;
};

// A byte[] argument copied out of the Java heap (the library may block while it holds the
// bytes, which rules out pinning them). null gives (NULL, 0).
class JBytes {
public:
    bool load(JNIEnv *env, jbyteArray a);
    const void *data() const { return null_ ? nullptr : data_; }
    size_t size() const { return size_; }

private:
    char small_[512];
    std::unique_ptr<char[]> big_;
    char *data_ = small_;
    size_t size_ = 0;
    bool null_ = true;
};

}  // namespace mqj
#endif
