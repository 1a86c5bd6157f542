/* hooks/compat/GL/gl.h — the two OpenGL types cuda_gl_interop.h needs, so that the cudart
 * wrappers build (and scripts/gen_hooks.py parses) without OpenGL development headers.
 * Same ABI as the real <GL/gl.h>. Only hooks/ sees this directory (-Ihooks/compat). */
#ifndef __gl_h_
#define __gl_h_
#define __GL_H__
#ifndef GL_VERSION
#define GL_VERSION 0x1F02 /* cuda_gl_interop.h on ARM insists that GL headers came first */
#endif
typedef unsigned int GLenum;
typedef unsigned int GLuint;
#endif
