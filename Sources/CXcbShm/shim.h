// XCB with the MIT-SHM extension, for desktop capture.
#pragma once
#include <stdlib.h>
#include <xcb/xcb.h>
#include <xcb/shm.h>
