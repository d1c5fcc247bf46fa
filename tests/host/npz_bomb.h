/*
 * Test helper: .npz archives of one deflated member that inflates to far more than the archive
 * holds (a decompression bomb), written by hand (ZIP headers, raw deflate from zlib) so that the
 * test controls every size field. The member's data is never held in memory: after a full flush
 * the deflate stream of a chunk of zeros is the same bytes every time, so the archive is that
 * chunk's bytes repeated. What must stay true: the archives are valid ZIP files (the CRC and the
 * sizes are the real ones unless `declared` says otherwise), so only tether's own checks refuse
 * them.
 */
#ifndef TETHER_TEST_NPZ_BOMB_H
#define TETHER_TEST_NPZ_BOMB_H

#include <stdint.h>

/* Writes path: one member `member` (e.g. "x.npy") whose .npy header (version 1.0) says dtype
 * `descr` ("<f4") and shape (n,), followed by `zeros` bytes of zeros; the archive's
 * uncompressed-size fields say `declared` (UINT64_MAX: the real size, header + zeros; it must
 * stay below 4 GiB: no ZIP64). Returns the archive's size in bytes, or 0 on failure (message on
 * stderr). */
uint64_t tt_write_npz_bomb(const char *path, const char *member, const char *descr, uint64_t n,
                           uint64_t zeros, uint64_t declared);

#endif
