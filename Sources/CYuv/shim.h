// libyuv ships no pkg-config file; this module links it by name.
#pragma once
#include <libyuv.h>
