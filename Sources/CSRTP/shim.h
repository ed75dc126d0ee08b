// libsrtp2 (Debian libsrtp2-dev), the SRTP library Janus itself uses.
#pragma once
#include <srtp2/srtp.h>
