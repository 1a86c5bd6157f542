/* stacks.c — the service's start: dlh_stacks_init (dlh_unwind.h) sets up capture (tables,
 * libunwind, fork guard), the module map, the symbolizer's libdw and the CPython walker, and
 * decides the effective mode from what it found. */
#include "unwind_int.h"

void dlh_stacks_init(const dlh_unwind_settings *settings) {
  dlh_capture_set_mode(DLH_STACKS_NONE);
  dlh_unwind_cfg = *settings;
  int want = settings->mode;
  if (want == DLH_STACKS_NONE) return;
  int native = dlh_capture_setup(settings);
  if (native < 0) return;
  dlh_symbolize_preload();
  int py = dlh_py_init(settings->fd_move_up);
  if (want < 0) want = py ? DLH_STACKS_MIXED : DLH_STACKS_NATIVE;
  if ((want == DLH_STACKS_MIXED || want == DLH_STACKS_PYTHON) && !py) want = DLH_STACKS_NATIVE;
  if (want != DLH_STACKS_PYTHON && !native) want = py ? DLH_STACKS_PYTHON : DLH_STACKS_NONE;
  dlh_capture_set_mode(want);
}
