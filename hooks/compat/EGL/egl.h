/* hooks/compat/EGL/egl.h — the EGL types cuda_egl_interop.h needs, so that the cudart wrappers
 * build (and scripts/gen_hooks.py parses) without EGL development headers. Same ABI as the real
 * <EGL/egl.h>. Only hooks/ sees this directory (-Ihooks/compat). */
#ifndef __egl_h_
#define __egl_h_
#include <stdint.h>
typedef int32_t EGLint;
typedef void *EGLDisplay;
#endif
