#include "util/names.h"

#include <cstring>

#include "util/error.h"

namespace mq {

mq_status check_name(const char *name, const char *what) noexcept {
    if (!name) return fail(MQ_ERR_INVALID, "%s name is NULL", what);
    const size_t len = strnlen(name, kMaxNameLength + 1);
    if (len == 0) return fail(MQ_ERR_INVALID, "%s name is empty", what);
    if (len > kMaxNameLength) {
        return fail(MQ_ERR_INVALID, "%s name is longer than %zu characters", what, kMaxNameLength);
    }
    for (size_t i = 0; i < len; i++) {
        const unsigned char ch = static_cast<unsigned char>(name[i]);
        const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                        (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
        if (!ok) {
            return fail(MQ_ERR_INVALID,
                        "%s name \"%.*s\" has character 0x%02x at position %zu; names are 1 to "
                        "249 characters of [a-zA-Z0-9._-]",
                        what, static_cast<int>(len > 64 ? 64 : len), name, ch, i);
        }
    }
    if (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.'))) {
        return fail(MQ_ERR_INVALID,
                    "%s name \"%s\" is not allowed: \".\" and \"..\" are reserved (Kafka's rule); "
                    "use a name with another character",
                    what, name);
    }
    return MQ_OK;
}

bool names_collide(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); i++) {
        const char x = a[i] == '.' ? '_' : a[i];
        const char y = b[i] == '.' ? '_' : b[i];
        if (x != y) return false;
    }
    return true;
}

}  // namespace mq
