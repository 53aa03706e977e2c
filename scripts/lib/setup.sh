# Shared by the scripts in scripts/ (sourced, not run): section headers and
# installing missing build tools with apt on Debian/Ubuntu.

section() {
    printf '\n==== %s ====\n' "$*"
}

# The Debian package providing each tool the scripts may need.
_package_for() {
    case $1 in
        cmake) echo cmake ;;
        ninja) echo ninja-build ;;
        gcc) echo gcc ;;
        g++) echo g++ ;;
        pkg-config) echo pkg-config ;;
        nm | readelf) echo binutils ;;
        gtest) echo libgtest-dev ;;
        clang-format) echo clang-format ;;
        gnuplot) echo gnuplot-nox ;;
        kcat) echo kcat ;;
        rdkafka) echo librdkafka-dev ;;
        java) echo default-jre-headless ;;
        mvn) echo maven ;;
        *)
            echo "setup.sh: no package known for '$1'" >&2
            return 1
            ;;
    esac
}

_have() {
    case $1 in
        # GoogleTest is a library: look for what find_package(GTest) needs.
        gtest) [ -e /usr/include/gtest/gtest.h ] && {
            compgen -G '/usr/lib/*/libgtest.a' >/dev/null ||
                compgen -G '/usr/lib/*/cmake/GTest/GTestConfig.cmake' >/dev/null
        } ;;
        # librdkafka (the Kafka backend): what pkg_check_modules(rdkafka) needs.
        rdkafka) [ -e /usr/include/librdkafka/rdkafka.h ] && pkg-config --exists rdkafka 2>/dev/null ;;
        *) command -v "$1" >/dev/null 2>&1 ;;
    esac
}

# ensure_tools <tool>...: installs the packages of the missing tools (apt-get update first, and
# only when something is missing). Fails with the package list where it cannot install.
ensure_tools() {
    local tool missing=()
    for tool in gcc "$@"; do
        if ! _have "$tool"; then
            missing+=("$(_package_for "$tool")")
        fi
    done
    if [ ${#missing[@]} -eq 0 ]; then
        return 0
    fi
    # Unique, keeping order (nm and readelf share a package).
    mapfile -t missing < <(printf '%s\n' "${missing[@]}" | awk '!seen[$0]++')
    section "installing ${missing[*]}"
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo=(sudo)
        else
            echo "missing packages and not root (no sudo): install ${missing[*]}" >&2
            return 1
        fi
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "missing packages and no apt-get: install ${missing[*]} (Debian names)" >&2
        return 1
    fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends "${missing[@]}"
}
