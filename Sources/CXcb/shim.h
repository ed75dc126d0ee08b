// XCB with the MIT-SHM extension (the capture) and DAMAGE (whether
// anything was drawn since), for desktop capture.
#pragma once
#include <stdlib.h>
#include <xcb/xcb.h>
#include <xcb/shm.h>
#include <xcb/damage.h>

// The DAMAGE extension's data (its xcb_extension_t is opaque to Swift).
static inline const xcb_query_extension_reply_t *cxcb_damage_extension(xcb_connection_t *connection) {
    return xcb_get_extension_data(connection, &xcb_damage_id);
}
