/* dlh_elfsym.h — a symbol index of one ELF file: its function symbols (.symtab and .dynsym)
 * sorted by address once, then looked up by binary search. Shared by libdlhook.so (the writer
 * thread resolves the return addresses of call stacks) and the dlhook command (`dlhook
 * symbolize`). Building the index of libtorch_cuda.so (~236,000 symbols) costs tens of
 * milliseconds once; a lookup costs O(log n), independent of where the address lies.
 *
 * The ELF is read with elfutils' libelf through a table of functions (dlh_elf_api): the
 * command links libelf, libdlhook.so takes the functions from a privately loaded copy
 * (dlopen RTLD_LOCAL) so that they never join the program's symbol scope.
 *
 * Names point into the file's string tables, which libelf maps read-only (ELF_C_READ_MMAP):
 * the index itself holds 16 bytes per symbol; the file descriptor is closed once the file is
 * mapped. The symbol tables' pages are read once and given back (madvise) as the index is
 * built, so that a large library (libtriton.so: 10 MB of symbol tables) does not stay resident
 * for the 4 MB its index needs. A file that is not ELF, is damaged or has no symbols gives NULL, never a crash. */
#ifndef DLH_ELFSYM_H
#define DLH_ELFSYM_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

/* The libelf functions the index uses. All must be set for dlh_symtab_open to work. */
typedef struct dlh_elf_api {
  unsigned (*version)(unsigned);
  Elf *(*begin)(int, Elf_Cmd, Elf *);
  int (*cntl)(Elf *, Elf_Cmd);
  int (*end)(Elf *);
  Elf_Scn *(*nextscn)(Elf *, Elf_Scn *);
  GElf_Shdr *(*getshdr)(Elf_Scn *, GElf_Shdr *);
  Elf_Data *(*getdata)(Elf_Scn *, Elf_Data *);
  GElf_Sym *(*getsym)(Elf_Data *, int, GElf_Sym *);
  char *(*strptr)(Elf *, size_t, size_t);
  size_t (*getnote)(Elf_Data *, size_t, GElf_Nhdr *, size_t *, size_t *);
  char *(*rawfile)(Elf *, size_t *); /* optional: the mapped image, whose read symbol-table
                                      * pages the index gives back once it has read them */
} dlh_elf_api;

typedef struct dlh_symtab dlh_symtab;

/* Opens `path` and indexes its function symbols. When want_id is non-NULL (want_len > 0), the
 * file's NT_GNU_BUILD_ID must equal it, else NULL (the file on disk is not the one that was
 * mapped). Returns NULL when the file cannot be read, is not ELF or holds no function symbol.
 * The caller owns the result (dlh_symtab_close). Not thread-safe against itself per index. */
dlh_symtab *dlh_symtab_open(const dlh_elf_api *api, const char *path, const uint8_t *want_id,
                            size_t want_len);

/* The function containing link-time address `addr` (runtime pc minus the load bias): its name
 * (owned by the index, valid until close; possibly mangled, possibly with "@VERSION") and, in
 * *off, addr minus the symbol's start. NULL when no symbol covers addr. */
const char *dlh_symtab_lookup(const dlh_symtab *t, uint64_t addr, uint64_t *off);

/* Number of symbols indexed, and the bytes the index itself occupies (not the mapped file). */
size_t dlh_symtab_count(const dlh_symtab *t);
size_t dlh_symtab_bytes(const dlh_symtab *t);

/* Bytes of the file's sections that are not loaded and hold data (.debug_*, .comment): the size
 * of its DWARF, what loading it for file:line would read. */
uint64_t dlh_symtab_debug_bytes(const dlh_symtab *t);

/* Reads the NT_GNU_BUILD_ID note of the ELF file at path into id (up to cap bytes). Returns its
 * length, or 0 when the file has none or cannot be read. */
size_t dlh_elf_build_id(const dlh_elf_api *api, const char *path, uint8_t *id, size_t cap);

/* Frees the index and unmaps the file; NULL is accepted. */
void dlh_symtab_close(dlh_symtab *t);

#endif
