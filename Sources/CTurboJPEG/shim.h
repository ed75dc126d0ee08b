// turbojpeg's function-like macros, which Swift cannot import.
#pragma once
#include <turbojpeg.h>

/// Row length padded to turbojpeg's 4-byte YUV alignment (TJPAD).
static inline int ctj_pad(int width) { return TJPAD(width); }

/// A dimension scaled by a turbojpeg scaling factor (TJSCALED).
static inline int ctj_scaled(int dimension, tjscalingfactor factor) { return TJSCALED(dimension, factor); }
