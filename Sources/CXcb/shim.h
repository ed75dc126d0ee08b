// XCB with the MIT-SHM extension (the capture), DAMAGE (whether anything
// was drawn since) and XFIXES (where), for desktop capture.
#pragma once
#include <stdlib.h>
#include <xcb/xcb.h>
#include <xcb/shm.h>
#include <xcb/damage.h>
#include <xcb/xfixes.h>

// The DAMAGE extension's data (its xcb_extension_t is opaque to Swift).
static inline const xcb_query_extension_reply_t *cxcb_damage_extension(xcb_connection_t *connection) {
    return xcb_get_extension_data(connection, &xcb_damage_id);
}

// The XFIXES extension's data.
static inline const xcb_query_extension_reply_t *cxcb_xfixes_extension(xcb_connection_t *connection) {
    return xcb_get_extension_data(connection, &xcb_xfixes_id);
}
