# The cffi extension (built from include/mq.h): untyped by nature; the wrappers around it are
# typed.
from typing import Any

ffi: Any
lib: Any
