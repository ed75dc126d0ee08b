#ifndef FR_PIPEWIRE_STREAM_H
#define FR_PIPEWIRE_STREAM_H

#include <stddef.h>
#include <stdint.h>

/// A PipeWire video stream consumed for the newest picture: SPA's pod
/// builders are inline functions and variadic macros Swift cannot call,
/// so the stream's negotiation and its callbacks live here, and Swift
/// takes whole frames (see PipeWireCapture.swift).
typedef struct fr_pw_stream fr_pw_stream;

enum { FR_PW_MAX_RECTS = 16, FR_PW_MAX_CURSOR = 256 };

/// The pictures' layout: 32-bit BGRx or BGRA, or 8-bit YUV 4:2:0 (I420: Y, U,
/// V planes; NV12: Y, then U and V interleaved), BT.601 as GStreamer's default.
enum fr_pw_format { FR_PW_FORMAT_NONE = 0, FR_PW_FORMAT_BGRX, FR_PW_FORMAT_BGRA, FR_PW_FORMAT_I420, FR_PW_FORMAT_NV12 };

enum fr_pw_state { FR_PW_CONNECTING = 0, FR_PW_STREAMING, FR_PW_PAUSED, FR_PW_ENDED, FR_PW_FAILED };

typedef struct {
    int x, y, width, height;
} fr_pw_rect;

typedef struct {
    int width, height;
    enum fr_pw_format format;
    /// Bytes from one row to the next in each plane (unused planes 0).
    int strides[3];
    /// What changed since the last frame taken: `damage_count` rectangles,
    /// or -1 for the whole picture (no damage meta, too many rectangles, a new size).
    int damage_count;
    fr_pw_rect damage[FR_PW_MAX_RECTS];
    /// The compositor's time for the picture (SPA_META_Header pts, ns; its
    /// clock is CLOCK_MONOTONIC for Mutter), or -1 when the buffer has none.
    int64_t pts;
    /// When PipeWire handed the picture to us (CLOCK_MONOTONIC, ns).
    int64_t delivered;
    /// Whether the picture is new (0: only the cursor changed; the picture
    /// is the one taken before, still held).
    int picture;
    /// The cursor the compositor sent beside the picture (SPA_META_Cursor):
    /// where its image's top-left pixel falls in the picture (the position
    /// less the hotspot) and its size, 0 wide when there is none to draw;
    /// and whether it moved or changed since the last take.
    fr_pw_rect cursor;
    int cursor_changed;
} fr_pw_frame;

/// Connects to PipeWire (`fd` from the portal's OpenPipeWireRemote, owned by
/// the stream from here on, or -1 for the user's daemon) and to node `node` as a video consumer. NULL on
/// failure, with a sentence in `error`.
fr_pw_stream *fr_pw_stream_open(int fd, uint32_t node, char *error, size_t error_size);

/// Waits up to `timeout_ms` for the format to be agreed: 1 with the
/// picture's size, 0 when it was not (see fr_pw_stream_state for why).
int fr_pw_stream_wait_format(fr_pw_stream *stream, int timeout_ms, int *width, int *height);

/// The stream's state, with a sentence in `error` (when not NULL) when it failed or ended.
enum fr_pw_state fr_pw_stream_state(fr_pw_stream *stream, char *error, size_t error_size);

/// Waits up to `timeout_ms` for a picture not yet taken: 1 when one is there.
int fr_pw_stream_wait_picture(fr_pw_stream *stream, int timeout_ms);

/// Takes the newest frame when one came since the last take (1; its
/// buffer stays ours until the next take or close), or 0 when none did.
int fr_pw_stream_take(fr_pw_stream *stream, fr_pw_frame *frame);

/// Rows `y` to `y + rows - 1` of the frame taken last (`y` even for YUV):
/// in `planes`, a pointer to each plane's first byte of row `y` (a chroma
/// plane's row y / 2), valid until the next call, take or close. Only these
/// rows are mapped (a shared-memory buffer is mapped a band at a time, so a
/// large picture never stays resident in this process). 0 when there is no
/// such frame any more (the stream renegotiated) or a mapping failed.
int fr_pw_stream_rows(fr_pw_stream *stream, int y, int rows, const uint8_t *planes[3]);

/// Unmaps the rows fr_pw_stream_rows mapped, once read: 1 when they were
/// whole, 0 when the node shrank its buffer under the read (a SIGBUS the
/// segment guard turned into zeros: the rows read are not its picture, and
/// the stream fails).
int fr_pw_stream_release_rows(fr_pw_stream *stream);

/// The cursor image of the frame taken last: premultiplied BGRA, its
/// width × 4 bytes a row (fr_pw_frame's cursor size), valid until the next take.
const uint8_t *fr_pw_stream_cursor_image(fr_pw_stream *stream);

void fr_pw_stream_close(fr_pw_stream *stream);

#endif
