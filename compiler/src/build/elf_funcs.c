/*
 * The function symbols of a compiled object (ELF32 or ELF64, either byte order), for the static
 * stack analysis (stack.c): gcc's identical code folding (-fipa-icf, on at -O2 and above) keeps
 * one body for functions that compile to the same code (two quantize kernels of one shape in a
 * float island, two identical dequantize kernels) and makes the others local aliases of it, at
 * the same section and address. Its -fcallgraph-info file still has edges to the folded names,
 * but no node (no frame) for them; the object's symbol table says which body each one is.
 *
 * What must stay true: two names are reported as one function only when both are STT_FUNC
 * symbols defined in the same section at the same value (the same code), so a frame taken from
 * one is exactly the other's; a file that is missing or not ELF gives no symbols (and an error
 * code), never a guess.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "build_internal.h"
#include "tether/crt/error.h"

static uint64_t rd(const unsigned char *p, int size, int le) {
    uint64_t v = 0;
    for (int i = 0; i < size; i++) {
        v = (v << 8) | p[le ? size - 1 - i : i];
    }
    return v;
}

void tether__elf_funcs_free(tether__elf_funcs *f) {
    for (int i = 0; i < f->n; i++) {
        free(f->name[i]);
    }
    free(f->name);
    free(f->sec);
    free(f->value);
    memset(f, 0, sizeof *f);
}

static int push(tether__elf_funcs *f, const char *name, size_t len, uint32_t sec, uint64_t value) {
    if (f->n == f->cap) {
        int cap = f->cap ? f->cap * 2 : 32;
        char **nm = realloc(f->name, sizeof *nm * (size_t)cap);
        if (!nm) {
            return -1;
        }
        f->name = nm;
        uint32_t *s = realloc(f->sec, sizeof *s * (size_t)cap);
        if (!s) {
            return -1;
        }
        f->sec = s;
        uint64_t *v = realloc(f->value, sizeof *v * (size_t)cap);
        if (!v) {
            return -1;
        }
        f->value = v;
        f->cap = cap;
    }
    f->name[f->n] = strndup(name, len);
    if (!f->name[f->n]) {
        return -1;
    }
    f->sec[f->n] = sec;
    f->value[f->n] = value;
    f->n++;
    return 0;
}

int tether__elf_funcs_read(const char *path, tether__elf_funcs *out) {
    memset(out, 0, sizeof *out);
    char *buf;
    size_t len;
    int rc = tether__read_file(path, &buf, &len);
    if (rc) {
        return rc;
    }
    const unsigned char *b = (const unsigned char *)buf;
    if (len < 64 || memcmp(b, "\177ELF", 4) != 0 || (b[4] != 1 && b[4] != 2)) {
        free(buf);
        return tether_set_error(TETHER_ERR_INVALID_ARG, "'%s' is not an ELF file", path);
    }
    int is64 = b[4] == 2, le = b[5] == 1;
    uint64_t shoff = is64 ? rd(b + 0x28, 8, le) : rd(b + 0x20, 4, le);
    uint64_t shentsize = rd(b + (is64 ? 0x3a : 0x2e), 2, le);
    uint64_t shnum = rd(b + (is64 ? 0x3c : 0x30), 2, le);
    if (shoff > len || shnum > (len - shoff) / (shentsize ? shentsize : 1) ||
        shentsize < (is64 ? 64u : 40u)) {
        free(buf);
        return tether_set_error(TETHER_ERR_INVALID_ARG, "'%s': truncated section table", path);
    }
    rc = TETHER_OK;
    for (uint64_t i = 0; i < shnum && !rc; i++) {
        const unsigned char *s = b + shoff + i * shentsize;
        if (rd(s + 4, 4, le) != 2) { /* SHT_SYMTAB */
            continue;
        }
        uint64_t off = is64 ? rd(s + 0x18, 8, le) : rd(s + 0x10, 4, le);
        uint64_t size = is64 ? rd(s + 0x20, 8, le) : rd(s + 0x14, 4, le);
        uint64_t link = rd(s + (is64 ? 0x28 : 0x18), 4, le);
        uint64_t entsize = is64 ? rd(s + 0x38, 8, le) : rd(s + 0x24, 4, le);
        if (link >= shnum || entsize < (is64 ? 24u : 16u) || off > len || size > len - off) {
            rc = tether_set_error(TETHER_ERR_INVALID_ARG, "'%s': bad symbol table", path);
            break;
        }
        const unsigned char *st = b + shoff + link * shentsize;
        uint64_t soff = is64 ? rd(st + 0x18, 8, le) : rd(st + 0x10, 4, le);
        uint64_t ssize = is64 ? rd(st + 0x20, 8, le) : rd(st + 0x14, 4, le);
        if (soff > len || ssize > len - soff) {
            rc = tether_set_error(TETHER_ERR_INVALID_ARG, "'%s': bad string table", path);
            break;
        }
        for (uint64_t k = 0; k + entsize <= size; k += entsize) {
            const unsigned char *sym = b + off + k;
            uint64_t name = rd(sym, 4, le), value, shndx;
            unsigned info;
            if (is64) {
                info = sym[4];
                shndx = rd(sym + 6, 2, le);
                value = rd(sym + 8, 8, le);
            } else {
                value = rd(sym + 4, 4, le);
                info = sym[12];
                shndx = rd(sym + 14, 2, le);
            }
            if ((info & 0xf) != 2 || shndx == 0 || shndx >= 0xff00 || name >= ssize) { /* FUNC */
                continue;
            }
            const char *nm = (const char *)b + soff + name;
            size_t nl = strnlen(nm, ssize - name);
            if (nl == 0 || nl == ssize - name) {
                continue;
            }
            if (push(out, nm, nl, (uint32_t)shndx, value)) {
                rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "stack: out of memory");
                break;
            }
        }
    }
    free(buf);
    if (rc) {
        tether__elf_funcs_free(out);
    }
    return rc;
}

int tether__elf_funcs_same(const tether__elf_funcs *f, const char *name, int nth) {
    int at = -1;
    for (int i = 0; i < f->n && at < 0; i++) {
        if (strcmp(f->name[i], name) == 0) {
            at = i;
        }
    }
    if (at < 0) {
        return -1;
    }
    for (int i = 0; i < f->n; i++) {
        if (i != at && f->sec[i] == f->sec[at] && f->value[i] == f->value[at] && nth-- == 0) {
            return i;
        }
    }
    return -1;
}
