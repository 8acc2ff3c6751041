/* SPDX-License-Identifier: BSD-2-Clause */
/* pyelf.h.  Data objects from .dynsym and .symtab, with libelf, bounds-checked. */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>

#include "collector/parser/pyelf.h"

static void scan_syms(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct pyelf_syms *s)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t count;

	if (!data || sh->sh_entsize == 0)
		return;
	count = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < count; i++) {
		const char *name;
		GElf_Sym sym;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		if (GELF_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name)
			continue;
		if (strcmp(name, "_PyRuntime") == 0)
			s->runtime = sym.st_value;
		else if (strcmp(name, "Py_Version") == 0)
			s->version = sym.st_value;
		else if (strcmp(name, "PyCode_Type") == 0)
			s->code_type = sym.st_value;
	}
}

int pyelf_symbols(int fd, struct pyelf_syms *s)
{
	Elf_Scn *scn = NULL;
	Elf *elf;
	size_t nph = 0;
	int err = 0;

	memset(s, 0, sizeof(*s));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph) != 0) {
		err = -ENOEXEC;
		goto cleanup;
	}
	s->first_load = UINT64_MAX;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_offset == 0) {
			s->first_load = ph.p_vaddr;
			break;
		}
	}
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB))
			scan_syms(elf, scn, &sh, s);
	}
	if (s->first_load == UINT64_MAX)
		err = -ENOEXEC;

cleanup:
	if (elf)
		elf_end(elf);
	if (err)
		memset(s, 0, sizeof(*s));
	return err;
}
