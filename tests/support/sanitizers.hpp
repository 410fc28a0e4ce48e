// Whether this build runs under AddressSanitizer, whichever compiler built it: GCC says so with
// __SANITIZE_ADDRESS__, clang 14 only through __has_feature. Tests that allow for ASan's costs
// (its quarantine, its slower start) or check its poisoning test CSPD_TEST_ASAN.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define CSPD_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CSPD_TEST_ASAN 1
#endif
#endif
