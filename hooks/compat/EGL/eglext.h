/* hooks/compat/EGL/eglext.h — the EGL extension handle types cuda_egl_interop.h needs (opaque
 * pointers, as in the real <EGL/eglext.h>). Only hooks/ sees this directory. */
#ifndef __eglext_h_
#define __eglext_h_
#include "egl.h"
typedef void *EGLImageKHR;
typedef void *EGLStreamKHR;
typedef void *EGLSyncKHR;
#endif
