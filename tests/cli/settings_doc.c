/* settings_doc.c — prints the README's settings table (Markdown) from the one table of DLHOOK_*
 * settings, preload/dlh_settings.def. `make settings-doc` writes it into README.md;
 * tests/cli/t_settings_doc.sh checks that README.md holds exactly this. */
#include <signal.h>
#include <stdio.h>

int main(void) {
  puts("| variable | default | meaning |");
  puts("|---|---|---|");
#define DLH_SETTING(name, kind, def, lo, hi, choices, ddef, doc) \
  if (doc) printf("| `%s` | %s | %s |\n", #name, (const char *)ddef, (const char *)doc);
#include "dlh_settings.def"
#undef DLH_SETTING
  return 0;
}
