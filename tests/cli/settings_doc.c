/* settings_doc.c — prints the settings table of docs/settings.md (Markdown) from the one table
 * of DLHOOK_* settings, preload/dlh_settings.def. `make settings-doc` writes it into
 * docs/settings.md; tests/cli/t_settings_doc.sh checks that docs/settings.md holds exactly this. */
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
