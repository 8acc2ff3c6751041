/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Symbol offsets from .dynsym (and .symtab where present) with libelf.
 * Reads files named by other processes' mappings, so everything is
 * bounds-checked and a malformed file is an error; the collector runs it
 * in the parser child (parser_child.c), so a file that crashes libelf
 * anyway costs that child, not the collector.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "collector/parser/elfsyms.h"

/* "name" or a versioned "name@VER" / "name@@VER". */
static int same_symbol(const char *sym, const char *name)
{
	size_t n = strlen(name);

	return strncmp(sym, name, n) == 0 && (sym[n] == '\0' || sym[n] == '@');
}

static int scan_table(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
		      const char *const *names, size_t n, uint64_t *offsets)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t count, found = 0;

	if (!data || sh->sh_entsize == 0)
		return 0;
	count = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < count; i++) {
		GElf_Sym sym;
		GElf_Shdr target;
		Elf_Scn *tscn;
		const char *sname;
		int type;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_value == 0 ||
		    sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE)
			continue;
		sname = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!sname)
			continue;
		for (size_t k = 0; k < n; k++) {
			if (offsets[k] || !same_symbol(sname, names[k]))
				continue;
			tscn = elf_getscn(elf, sym.st_shndx);
			if (!tscn || !gelf_getshdr(tscn, &target) ||
			    sym.st_value < target.sh_addr ||
			    sym.st_value - target.sh_addr >= target.sh_size)
				continue;
			/* Virtual address to file offset, through its section. */
			offsets[k] = sym.st_value - target.sh_addr + target.sh_offset;
			found++;
		}
	}
	return (int)found;
}

int elfsyms_resolve(const char *path, const char *const *names, size_t n,
		    uint64_t *offsets)
{
	int fd, found;

	memset(offsets, 0, n * sizeof(*offsets));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	found = elfsyms_resolve_fd(fd, names, n, offsets);
	close(fd);
	return found;
}

int elfsyms_resolve_fd(int fd, const char *const *names, size_t n, uint64_t *offsets)
{
	Elf_Scn *scn = NULL;
	Elf *elf = NULL;
	int found = 0, err = 0;

	memset(offsets, 0, n * sizeof(*offsets));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto cleanup;
	}
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB)
			found += scan_table(elf, scn, &sh, names, n, offsets);
	}
	err = found;

cleanup:
	if (elf)
		elf_end(elf);
	return err;
}
