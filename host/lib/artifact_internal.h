/*
 * What the host library's profiler (profile.c) reads of an artifact (artifact.c) beyond the
 * public tether/artifact.h: the "profile" object of a profiling build's metadata.json, the
 * directory and session, and the C backend's profile table of the last call.
 *
 * What must stay true: nothing here changes how an artifact runs; the table is read only after a
 * run (the module keeps the last call's).
 */
#ifndef TETHER_HOST_ARTIFACT_INTERNAL_H
#define TETHER_HOST_ARTIFACT_INTERNAL_H

#include <stddef.h>

#include "tether/artifact.h"

/* metadata.json's "profile" object as JSON text, NULL when the artifact is not a profiling
 * build. */
const char *tether__artifact_profile_json(const tether_artifact *a);
const char *tether__artifact_dir(const tether_artifact *a);
/* The session of a prepared artifact (NULL before prepare). */
tether_session *tether__artifact_session(const tether_artifact *a);
/* C backend: calls <prefix>_profile and copies its table (n = table_bytes) into buf. */
int tether__artifact_profile_table(tether_artifact *a, void *buf, size_t n);

#endif /* TETHER_HOST_ARTIFACT_INTERNAL_H */
