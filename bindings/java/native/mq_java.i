// The SWIG interface of the Java binding. SWIG reads the facade (native/facade/*.h), not mq.h:
// classes with methods, directors for the callbacks, and failures thrown as exceptions. The
// generated classes are package-private in org.mq; the public API is hand-written on top.
%module(directors="1") NativeMq

%{
// Library threads are attached as daemons (the JVM's exit never waits for them) and detached
// when they end, not after every call (attaching costs microseconds).
#define SWIG_JAVA_ATTACH_CURRENT_THREAD_AS_DAEMON
#define SWIG_JAVA_DETACH_ON_THREAD_END
#include "facade/broker.h"
#include "facade/errors.h"
#include "facade/handles.h"
#include "facade/member.h"
#include "facade/push.h"
#include <cstdlib>
%}

// ---- package-private generated classes -------------------------------------------------------
%pragma(java) moduleclassmodifiers="final class"
%pragma(java) jniclassclassmodifiers="final class"
%typemap(javaclassmodifiers) SWIGTYPE "final class"
// Directors are subclassed by the hand-written Java.
%typemap(javaclassmodifiers) mqj::MessageSink, mqj::AssignorSink, mqj::RebalanceSink "abstract class"
// No finalize(): the Java side releases every native object explicitly (or via a Cleaner).
%typemap(javafinalize) SWIGTYPE ""

// The JNI class loads the library from the jar before anything else.
%pragma(java) jniclasscode=%{
  static {
    NativeLoader.load();
  }
%}

// ---- failures ----------------------------------------------------------------------------
// Every facade call: an Error becomes org.mq.MqException.create(status, message), thrown in
// Java; nothing else may escape into the JVM either.
%exception {
  try {
    $action
  } catch (const mqj::Error &e) {
    mqj::throw_java(jenv, e.status, e.message.data(), e.message.size());
    return $null;
  } catch (const std::bad_alloc &) {
    static const char kText[] = "out of memory in the native library";
    mqj::throw_java(jenv, MQ_ERR_NO_MEMORY, kText, sizeof kText - 1);
    return $null;
  } catch (...) {
    static const char kText[] = "unexpected exception in the Java binding's native code";
    mqj::throw_java(jenv, MQ_ERR_INTERNAL, kText, sizeof kText - 1);
    return $null;
  }
}

// ---- arguments ---------------------------------------------------------------------------
%include "typemaps.i"
%include "stdint.i"

// The wrapper's JNIEnv, for facade methods that build Java values.
%typemap(in, numinputs=0) JNIEnv *jenv "$1 = jenv;"

// Names: org.mq.Names turns a String into the address of a native NUL-terminated copy (kept
// for legal names; made for this call and freed after it, low bit set, for any other).
%typemap(jni) const char *NAME "jlong"
%typemap(jtype) const char *NAME "long"
%typemap(jstype) const char *NAME "String"
%typemap(javain) const char *NAME "Names.handle($javainput)"
%typemap(in) const char *NAME (mqj::NameArg name) %{
  $1 = const_cast<char *>(name.take($input));
%}
%typemap(freearg) const char *NAME ""
%apply const char *NAME { const char *topic, const char *group, const char *member_id,
                          const char *dead_letter_topic };

// Byte strings: a byte[] (null allowed) copied out of the Java heap.
%typemap(jni) (const void *BYTES, size_t LEN) "jbyteArray"
%typemap(jtype) (const void *BYTES, size_t LEN) "byte[]"
%typemap(jstype) (const void *BYTES, size_t LEN) "byte[]"
%typemap(javain) (const void *BYTES, size_t LEN) "$javainput"
%typemap(in) (const void *BYTES, size_t LEN) (mqj::JBytes bytes) %{
  if (!bytes.load(jenv, $input)) return $null;
  $1 = const_cast<void *>(bytes.data());
  $2 = bytes.size();
%}
%apply (const void *BYTES, size_t LEN) { (const void *key, size_t key_len),
                                         (const void *value, size_t value_len),
                                         (const void *headers, size_t headers_len),
                                         (const void *kafka_bootstrap, size_t kafka_bootstrap_len),
                                         (const void *kafka_config, size_t kafka_config_len) };

// Direct ByteBuffers over native memory (a push handler's message).
%typemap(jni) jbytebuffer "jobject"
%typemap(jtype) jbytebuffer "java.nio.ByteBuffer"
%typemap(jstype) jbytebuffer "java.nio.ByteBuffer"
%typemap(javaout) jbytebuffer { return $jnicall; }
%typemap(out) jbytebuffer %{ $result = $1; %}
%typemap(directorin, descriptor="Ljava/nio/ByteBuffer;") jbytebuffer %{ $input = $1; %}
%typemap(javadirectorin) jbytebuffer "$jniinput"

// An asynchronous call's completion object (org.mq.AsyncCall), passed in as is; the facade
// takes a global reference to it for as long as the call runs.
%typemap(jni) jasynccall "jobject"
%typemap(jtype) jasynccall "AsyncCall<?>"
%typemap(jstype) jasynccall "AsyncCall<?>"
%typemap(javain) jasynccall "$javainput"
%typemap(in) jasynccall %{ $1 = $input; %}

// The library thread's handler call must never see a Java exception: the hand-written sink
// catches everything, and whatever still escapes (an error thrown while reporting) is cleared
// here and the message nacked.
%feature("director:except") mqj::MessageSink::deliver %{
  if (jenv->ExceptionCheck()) {
    jenv->ExceptionClear();
    if (swigjobj) jenv->DeleteLocalRef(swigjobj);  // a library thread's refs are never popped
    return 1;
  }
%}
%feature("director:except") mqj::RebalanceSink::onRebalance %{
  if (jenv->ExceptionCheck()) {
    jenv->ExceptionClear();
    return;
  }
%}
%feature("director:except") mqj::AssignorSink::assign %{
  if (jenv->ExceptionCheck()) {
    jenv->ExceptionClear();
    return std::string();
  }
%}

// Ownership passes to the native side with the sinks (deleted after their last call).
%typemap(javain) mqj::MessageSink *sink, mqj::AssignorSink *assignor,
                 mqj::RebalanceSink *listener "$javaclassname.getCPtr($javainput)"

%include "std_string.i"
%feature("director") mqj::MessageSink;
%feature("director") mqj::AssignorSink;
%feature("director") mqj::RebalanceSink;

// Generated names that leave the public ones (ManualClock, ...) to the hand-written API.
%rename(NativeClock) mqj::ManualClock;
%rename(NativeCancel) mqj::CancelToken;
%rename(NativeMessageSink) mqj::MessageSink;
%rename(NativeAssignorSink) mqj::AssignorSink;
%rename(NativeRebalanceSink) mqj::RebalanceSink;

// What Java never calls directly.
%ignore mqj::NativeBroker::keep;

%include "facade/jvm.h"
%include "facade/broker.h"
%include "facade/push.h"
%include "facade/member.h"
%include "facade/handles.h"
