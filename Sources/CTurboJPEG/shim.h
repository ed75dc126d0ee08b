// turbojpeg is plain C and imports as is; the shim only names the version.
#pragma once
#include <turbojpeg.h>

static inline int ctj_version_major(void) { return TJ_NUMSAMP; }
