// zlib (Debian zlib1g-dev), for the CRC-32 of a STUN FINGERPRINT (RFC 5389 §15.5).
#pragma once
#include <zlib.h>
