/* hooks/compat/vdpau/vdpau.h — the VDPAU types cuda_vdpau_interop.h needs, so that the cudart
 * wrappers build (and scripts/gen_hooks.py parses) without libvdpau-dev. Same ABI as the real
 * <vdpau/vdpau.h> (handles are uint32_t, VdpStatus is an enum). Only hooks/ sees this. */
#ifndef _VDPAU_H
#define _VDPAU_H
#include <stdint.h>
typedef uint32_t VdpDevice;
typedef uint32_t VdpVideoSurface;
typedef uint32_t VdpOutputSurface;
typedef uint32_t VdpFuncId;
typedef enum { VDP_STATUS_OK = 0 } VdpStatus;
typedef VdpStatus VdpGetProcAddress(VdpDevice device, VdpFuncId function_id, void **function_pointer);
#endif
