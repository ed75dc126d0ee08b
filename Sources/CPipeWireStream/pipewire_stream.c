#include "pipewire_stream.h"
#include "segment_guard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <pipewire/pipewire.h>
#include <spa/buffer/meta.h>
#include <spa/param/video/format-utils.h>
#include <spa/param/video/type-info.h>
#include <spa/utils/result.h>
#include <spa/debug/types.h>

/// Where one plane of a buffer's picture is: which of its datas, the byte
/// offset in it and the bytes from one row to the next.
struct fr_pw_plane {
    uint32_t data;
    size_t offset, stride;
};

/// A buffer's data mapped whole for as long as PipeWire keeps the buffer:
/// a small picture's rows are read with no mmap a band (PipeWire cycles a
/// few buffers, so after the first pictures no page is mapped again).
struct fr_pw_mapping {
    struct pw_buffer *buffer;
    uint32_t data;
    /// The mapping, from the page holding the data's mapoffset.
    uint8_t *base;
    size_t size, lead;
    int guard;
    uint32_t faults;
};

/// Pictures whose data is at most this large are mapped whole (1080p BGRx
/// is 8.3 MB), up to FR_PW_MAPPED_MOST bytes in all; larger ones a band at a
/// time, so a large monitor's buffers never stay resident.
enum { FR_PW_MAPPED_EACH = 16 << 20, FR_PW_MAPPED_MOST = 48 << 20, FR_PW_MAPPINGS = 16 };

struct fr_pw_stream {
    struct pw_thread_loop *loop;
    struct pw_context *context;
    struct pw_core *core;
    struct spa_hook core_listener;
    struct pw_registry *registry;
    struct spa_hook registry_listener;
    struct pw_stream *stream;
    struct spa_hook stream_listener;
    uint32_t node;
    /// The registry named the node (1), and whether it is a video source; the first sync came back.
    int node_seen, node_is_video, synced, sync_seq;
    /// What the id is when it is no node (the core, a client, a port), from the registry.
    char other_type[64];
    /// Its object.serial: what a session manager's `target.object` names (not the id).
    char node_serial[32];
    struct spa_video_info_raw info;
    enum fr_pw_format format;
    enum fr_pw_state state;
    int streamed;
    /// Pictures in a row that did not fit their buffers (or came marked corrupted): at FR_PW_UNREADABLE the stream fails.
    int unreadable;
    char error[256];
    /// The newest whole buffer not yet taken, and the one taken (mapped until the next take).
    struct pw_buffer *pending, *held;
    /// When PipeWire handed `pending` to us (CLOCK_MONOTONIC, ns).
    int64_t pending_delivered;
    /// The part of `held` that is the picture (SPA_META_VideoCrop: a window
    /// in a larger stream), and the part the take before it was.
    fr_pw_rect crop, last_crop;
    /// The rows of `held` mapped now (fr_pw_stream_rows), a plane each: the mapping's start and length.
    void *window[3];
    size_t window_size[3];
    /// Each window's segment guard (-1: none): a node may shrink its memfd
    /// under the read, which would be SIGBUS; guarded, the read finds zeros and we learn of it.
    int guard[3];
    /// Buffers' datas mapped whole (fr_pw_mapping), and their bytes in all.
    struct fr_pw_mapping mappings[FR_PW_MAPPINGS];
    size_t mapped_bytes;
    /// What changed since the last take: rectangles, or -1 for the whole picture.
    int damage_count;
    /// The last buffer's SPA_META_Header seq: a gap is a picture PipeWire
    /// recycled unseen, whose damage we never had (so all of it is new).
    uint64_t last_seq;
    int have_seq;
    /// The picture taken's planes, as read once at the take (its chunks live in memory the node may still write).
    struct fr_pw_plane planes[3];
    fr_pw_rect damage[FR_PW_MAX_RECTS];
    /// The cursor as the buffers last said it (SPA_META_Cursor): whether one
    /// is over the picture, its position and hotspot, its image
    /// (premultiplied BGRA, 0 wide when there is nothing to draw), and
    /// whether it changed since the last take; then the image as taken.
    int cursor_shown, cursor_dirty, cursor_image_new;
    int cursor_x, cursor_y, hotspot_x, hotspot_y, cursor_width, cursor_height;
    uint8_t cursor_image[FR_PW_MAX_CURSOR * FR_PW_MAX_CURSOR * 4];
    uint8_t cursor_taken[FR_PW_MAX_CURSOR * FR_PW_MAX_CURSOR * 4];
};

/// A cursor meta with room for a `w` × `h` bitmap.
#define CURSOR_META_SIZE(w, h) ((int)(sizeof(struct spa_meta_cursor) + sizeof(struct spa_meta_bitmap) + (w) * (h) * 4))

static int plane_count(enum fr_pw_format format) {
    return format == FR_PW_FORMAT_I420 ? 3 : format == FR_PW_FORMAT_NV12 ? 2 : 1;
}

/// Bytes in a row of plane `plane` before column `x` (the whole row's for x the width).
static size_t plane_bytes(enum fr_pw_format format, int plane, int x) {
    switch (format) {
    case FR_PW_FORMAT_I420: return plane ? (size_t)(x + 1) / 2 : (size_t)x;
    case FR_PW_FORMAT_NV12: return plane ? (size_t)(x + 1) / 2 * 2 : (size_t)x;
    default: return (size_t)x * 4;
    }
}

/// Rows of plane `plane` in `rows` rows of the picture (chroma planes have half, rounded up).
static size_t plane_rows(int plane, int rows) { return plane ? (size_t)(rows + 1) / 2 : (size_t)rows; }

/// Two seconds of a 30 frames/s node's pictures, none readable: a node we cannot take, not a glitch.
enum { FR_PW_UNREADABLE = 60 };

static void fail(struct fr_pw_stream *s, enum fr_pw_state state, const char *message) {
    if (s->state == FR_PW_FAILED || s->state == FR_PW_ENDED) return;
    s->state = state;
    snprintf(s->error, sizeof s->error, "%s", message);
    pw_thread_loop_signal(s->loop, false);
}

static void on_core_done(void *data, uint32_t id, int seq) {
    struct fr_pw_stream *s = data;
    if (id == PW_ID_CORE && seq == s->sync_seq) {
        s->synced = 1;
        pw_thread_loop_signal(s->loop, false);
    }
}

static void on_core_error(void *data, uint32_t id, int seq, int res, const char *message) {
    struct fr_pw_stream *s = data;
    (void)seq;
    char text[256];
    snprintf(text, sizeof text, "PipeWire error on object %u: %s (%s)", id, message ? message : "", spa_strerror(res));
    // The core itself failing (the daemon went away) ends everything; an error on another object is the stream's.
    if (id == PW_ID_CORE || id == s->node) fail(s, FR_PW_FAILED, text);
}

static const struct pw_core_events core_events = {
    PW_VERSION_CORE_EVENTS,
    .done = on_core_done,
    .error = on_core_error,
};

static void on_global(void *data, uint32_t id, uint32_t permissions, const char *type, uint32_t version, const struct spa_dict *props) {
    struct fr_pw_stream *s = data;
    (void)permissions, (void)version;
    if (id != s->node) return;
    if (strcmp(type, PW_TYPE_INTERFACE_Node) != 0) {
        const char *name = strrchr(type, ':');
        snprintf(s->other_type, sizeof s->other_type, "%s", name ? name + 1 : type);
        return;
    }
    s->node_seen = 1;
    const char *media = props ? spa_dict_lookup(props, PW_KEY_MEDIA_CLASS) : NULL;
    s->node_is_video = media != NULL && strstr(media, "Video") != NULL;
    const char *serial = props ? spa_dict_lookup(props, PW_KEY_OBJECT_SERIAL) : NULL;
    snprintf(s->node_serial, sizeof s->node_serial, "%s", serial ? serial : "");
}

static void on_global_remove(void *data, uint32_t id) {
    struct fr_pw_stream *s = data;
    if (id == s->node && s->node_seen) fail(s, FR_PW_ENDED, "the PipeWire node went away (the screen cast ended)");
}

static const struct pw_registry_events registry_events = {
    PW_VERSION_REGISTRY_EVENTS,
    .global = on_global,
    .global_remove = on_global_remove,
};

static const char *format_name(uint32_t format) {
    const char *name = spa_debug_type_find_short_name(spa_type_video_format, format);
    return name ? name : "unknown";
}

static void on_param_changed(void *data, uint32_t id, const struct spa_pod *param) {
    struct fr_pw_stream *s = data;
    if (param == NULL || id != SPA_PARAM_Format) return;
    uint32_t media_type, media_subtype;
    if (spa_format_parse(param, &media_type, &media_subtype) < 0) return;
    struct spa_video_info_raw info;
    memset(&info, 0, sizeof info);
    if (media_type != SPA_MEDIA_TYPE_video || media_subtype != SPA_MEDIA_SUBTYPE_raw || spa_format_video_raw_parse(param, &info) < 0) {
        fail(s, FR_PW_FAILED, "the PipeWire node offers no raw video we can take (BGRx, BGRA, I420 or NV12)");
        return;
    }
    enum fr_pw_format format;
    switch (info.format) {
    case SPA_VIDEO_FORMAT_BGRx: format = FR_PW_FORMAT_BGRX; break;
    case SPA_VIDEO_FORMAT_BGRA: format = FR_PW_FORMAT_BGRA; break;
    case SPA_VIDEO_FORMAT_I420: format = FR_PW_FORMAT_I420; break;
    case SPA_VIDEO_FORMAT_NV12: format = FR_PW_FORMAT_NV12; break;
    default: format = FR_PW_FORMAT_NONE; break;
    }
    if (format == FR_PW_FORMAT_NONE) {
        char text[128];
        snprintf(text, sizeof text, "the PipeWire node's format %s is not one we take (BGRx, BGRA, I420 or NV12)", format_name(info.format));
        fail(s, FR_PW_FAILED, text);
        return;
    }
    s->info = info;
    s->format = format;
    s->damage_count = -1;  // a new size: all of it
    uint8_t storage[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(storage, sizeof storage);
    const struct spa_pod *params[5];
    // Mapped memory only: a buffer we can read without a GPU.
    params[0] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
        SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(4, 2, 16),
        SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int((1 << SPA_DATA_MemFd) | (1 << SPA_DATA_MemPtr)));
    params[1] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header),
        SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
    params[2] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_VideoDamage),
        SPA_PARAM_META_size, SPA_POD_CHOICE_RANGE_Int(sizeof(struct spa_meta_region) * FR_PW_MAX_RECTS, sizeof(struct spa_meta_region),
                                                      sizeof(struct spa_meta_region) * FR_PW_MAX_RECTS));
    params[3] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_VideoCrop),
        SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_region)));
    // The cursor beside the picture, where the cast sends it so (its bitmap up to 1024 square; we draw up to FR_PW_MAX_CURSOR).
    params[4] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Cursor),
        SPA_PARAM_META_size, SPA_POD_CHOICE_RANGE_Int(CURSOR_META_SIZE(64, 64), CURSOR_META_SIZE(1, 1), CURSOR_META_SIZE(1024, 1024)));
    pw_stream_update_params(s->stream, params, 5);
}

static void on_state_changed(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error) {
    struct fr_pw_stream *s = data;
    (void)old;
    switch (state) {
    case PW_STREAM_STATE_ERROR: {
        char text[256];
        snprintf(text, sizeof text, "the PipeWire stream failed: %s", error ? error : "no reason given");
        fail(s, FR_PW_FAILED, text);
        break;
    }
    case PW_STREAM_STATE_UNCONNECTED:
        if (s->streamed) fail(s, FR_PW_ENDED, "the PipeWire stream was disconnected (the screen cast ended)");
        break;
    case PW_STREAM_STATE_STREAMING:
        if (s->state == FR_PW_CONNECTING || s->state == FR_PW_PAUSED) s->state = FR_PW_STREAMING;
        s->streamed = 1;
        break;
    case PW_STREAM_STATE_PAUSED:
        // Before the first streaming a stream passes through paused; after it, the source paused (a locked screen).
        if (s->streamed && s->state == FR_PW_STREAMING) s->state = FR_PW_PAUSED;
        break;
    default:
        break;
    }
    pw_thread_loop_signal(s->loop, false);
}

/// Adds a buffer's damage to what changed since the last take.
static void accumulate(struct fr_pw_stream *s, struct spa_buffer *buffer) {
    struct spa_meta_header *header = spa_buffer_find_meta_data(buffer, SPA_META_Header, sizeof *header);
    uint64_t seq = header ? header->seq : 0;
    if (header == NULL || (s->have_seq && seq != s->last_seq + 1)) s->damage_count = -1;
    s->last_seq = seq;
    s->have_seq = header != NULL;
    // A buffer with no picture (the cursor alone moved) changed none of it.
    if (s->damage_count < 0 || (buffer->n_datas > 0 && buffer->datas[0].chunk->size == 0)) return;
    struct spa_meta *meta = spa_buffer_find_meta(buffer, SPA_META_VideoDamage);
    if (meta == NULL) {
        s->damage_count = -1;
        return;
    }
    struct spa_meta_region *region;
    spa_meta_for_each(region, meta) {
        if (!spa_meta_region_is_valid(region)) break;
        if (s->damage_count == FR_PW_MAX_RECTS) {
            s->damage_count = -1;
            return;
        }
        // Kept within a range no picture exceeds, so moving it by the crop cannot overflow.
        s->damage[s->damage_count++] = (fr_pw_rect){SPA_CLAMP(region->region.position.x, -(1 << 24), 1 << 24), SPA_CLAMP(region->region.position.y, -(1 << 24), 1 << 24),
                                                    (int)SPA_MIN(region->region.size.width, 1u << 24), (int)SPA_MIN(region->region.size.height, 1u << 24)};
    }
}

/// Where each plane of `buffer`'s picture is, its chunks read once and
/// bounded by their data's size: 1, or 0 when a plane does not fit. A YUV
/// picture has a data a plane, or all of them in the first, one after
/// another. A chunk with no stride has GStreamer's default layout (rows
/// padded to 4 bytes; the planes after the first at even rows), as
/// GStreamer's pipewiresink sends I420 and NV12 (one data, stride 0); one
/// with a stride has V4L2's (I420's chroma rows half the luma's stride).
static int locate(struct fr_pw_stream *s, struct spa_buffer *buffer, struct fr_pw_plane planes[3]) {
    int width = (int)s->info.size.width, height = (int)s->info.size.height, count = plane_count(s->format);
    if (width <= 0 || height <= 0 || buffer->n_datas < 1) return 0;
    int32_t first_stride = buffer->datas[0].chunk->stride;
    for (int p = 0; p < count; p++) {
        uint32_t index = buffer->n_datas >= (uint32_t)count ? (uint32_t)p : 0;
        struct spa_data *d = &buffer->datas[index];
        size_t row = plane_bytes(s->format, p, width), padded = (row + 3) & ~(size_t)3;
        if (p == 0 || index > 0) {
            int32_t stride = p == 0 ? first_stride : d->chunk->stride;
            planes[p] = (struct fr_pw_plane){index, d->chunk->offset, stride > 0 ? (size_t)stride : padded};
        } else {
            size_t stride = first_stride <= 0 ? padded : s->format == FR_PW_FORMAT_I420 ? planes[0].stride / 2 : planes[0].stride;
            size_t rows_before = p == 1 ? (size_t)(height + 1) / 2 * 2 : plane_rows(1, height);
            planes[p] = (struct fr_pw_plane){0, planes[p - 1].offset + planes[p - 1].stride * rows_before, stride};
        }
        if (planes[p].stride < row || planes[p].stride > (size_t)INT32_MAX ||
            (uint64_t)planes[p].offset + (uint64_t)planes[p].stride * (plane_rows(p, height) - 1) + row > d->maxsize) return 0;
    }
    return 1;
}

/// Takes a buffer's cursor meta: where the cursor is and, when the
/// compositor sent one, its image (RGBA or BGRA, made BGRA). An id of 0 is
/// no cursor over the picture; a buffer without the meta changes nothing.
static void read_cursor(struct fr_pw_stream *s, struct spa_buffer *buffer) {
    struct spa_meta *meta = spa_buffer_find_meta(buffer, SPA_META_Cursor);
    if (meta == NULL || meta->data == NULL || meta->size < sizeof(struct spa_meta_cursor)) return;
    // The node can still write the meta: its headers are read once, into ours, and only ours are used.
    struct spa_meta_cursor cursor;
    memcpy(&cursor, meta->data, sizeof cursor);
    if (cursor.id == 0) {
        if (s->cursor_shown) s->cursor_shown = 0, s->cursor_dirty = 1;
        return;
    }
    if (!s->cursor_shown || cursor.position.x != s->cursor_x || cursor.position.y != s->cursor_y) s->cursor_dirty = 1;
    s->cursor_shown = 1;
    s->cursor_x = cursor.position.x;
    s->cursor_y = cursor.position.y;
    uint32_t at = cursor.bitmap_offset;
    if (at < sizeof cursor || (uint64_t)at + sizeof(struct spa_meta_bitmap) > meta->size) return;  // the image as before
    struct spa_meta_bitmap bitmap;
    memcpy(&bitmap, SPA_PTROFF(meta->data, at, void), sizeof bitmap);
    uint32_t width = bitmap.size.width, height = bitmap.size.height;
    uint64_t stride = bitmap.stride > 0 ? (uint64_t)bitmap.stride : (uint64_t)width * 4;
    int rgba = bitmap.format == SPA_VIDEO_FORMAT_RGBA;
    s->cursor_dirty = 1;
    s->cursor_image_new = 1;
    s->hotspot_x = cursor.hotspot.x;
    s->hotspot_y = cursor.hotspot.y;
    // An empty sprite, one larger than we draw, or one that does not fit its meta: nothing to draw.
    if ((!rgba && bitmap.format != SPA_VIDEO_FORMAT_BGRA) || width == 0 || height == 0 || width > FR_PW_MAX_CURSOR ||
        height > FR_PW_MAX_CURSOR || stride < (uint64_t)width * 4 ||
        (uint64_t)bitmap.offset + stride * (height - 1) + (uint64_t)width * 4 > meta->size - at) {
        s->cursor_width = s->cursor_height = 0;
        return;
    }
    const uint8_t *from = SPA_PTROFF(meta->data, (size_t)at + bitmap.offset, const uint8_t);
    for (uint32_t y = 0; y < height; y++) {
        const uint8_t *row = from + y * stride;
        uint8_t *into = s->cursor_image + (size_t)y * width * 4;
        for (uint32_t x = 0; x < width; x++, row += 4, into += 4) {
            into[0] = row[rgba ? 2 : 0];
            into[1] = row[1];
            into[2] = row[rgba ? 0 : 2];
            into[3] = row[3];
        }
    }
    s->cursor_width = (int)width;
    s->cursor_height = (int)height;
}

/// Whether a buffer holds a whole picture we can read.
static int readable(struct fr_pw_stream *s, struct spa_buffer *buffer) {
    struct spa_meta_header *header = spa_buffer_find_meta_data(buffer, SPA_META_Header, sizeof *header);
    if (header && (header->flags & SPA_META_HEADER_FLAG_CORRUPTED)) return 0;
    if (buffer->n_datas < 1) return 0;
    for (uint32_t i = 0; i < buffer->n_datas && i < 3; i++) {
        struct spa_data *d = &buffer->datas[i];
        if (!(d->type == SPA_DATA_MemPtr && d->data != NULL) && !(d->type == SPA_DATA_MemFd && d->fd >= 0)) {
            fail(s, FR_PW_FAILED, "the PipeWire node sends only buffers we cannot map (DMA-BUF): capture needs shared-memory buffers");
            return 0;
        }
    }
    if (buffer->datas[0].chunk->size == 0) return 0;  // a cursor-only update: no picture
    struct fr_pw_plane planes[3];
    return locate(s, buffer, planes);
}

static void on_process(void *data) {
    struct fr_pw_stream *s = data;
    struct pw_buffer *buffer, *newest = NULL;
    while ((buffer = pw_stream_dequeue_buffer(s->stream)) != NULL) {
        if (s->format == FR_PW_FORMAT_NONE) {
            pw_stream_queue_buffer(s->stream, buffer);
            continue;
        }
        // Every buffer's damage and cursor count, a picture we skip too: what it changed is in the next one.
        accumulate(s, buffer->buffer);
        read_cursor(s, buffer->buffer);
        if (!readable(s, buffer->buffer)) {
            // A picture (not the cursor alone) we cannot read: said in one line once they keep coming, not a silent black broadcast.
            if (buffer->buffer->n_datas > 0 && buffer->buffer->datas[0].chunk->size > 0 && ++s->unreadable == FR_PW_UNREADABLE) {
                char text[192];
                snprintf(text, sizeof text, "PipeWire node %u's last %d pictures did not fit their buffers (a stride or offset past the buffer's end, or marked corrupted)",
                         s->node, FR_PW_UNREADABLE);
                fail(s, FR_PW_FAILED, text);
            }
            pw_stream_queue_buffer(s->stream, buffer);
            continue;
        }
        s->unreadable = 0;
        if (newest) pw_stream_queue_buffer(s->stream, newest);
        newest = buffer;
    }
    if (newest == NULL) {
        if (s->cursor_dirty) pw_thread_loop_signal(s->loop, false);  // the cursor alone moved
        return;
    }
    // A newer whole picture replaces the one not yet taken: its damage was added above.
    if (s->pending) pw_stream_queue_buffer(s->stream, s->pending);
    s->pending = newest;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    s->pending_delivered = (int64_t)now.tv_sec * SPA_NSEC_PER_SEC + now.tv_nsec;
    pw_thread_loop_signal(s->loop, false);
}

/// Unmaps a whole mapping (its buffer went, or the stream closes).
static void unmap_whole(struct fr_pw_stream *s, struct fr_pw_mapping *m) {
    if (m->guard >= 0) segment_guard_unregister(m->guard);
    munmap(m->base, m->size);
    s->mapped_bytes -= m->size;
    memset(m, 0, sizeof *m);
}

/// A buffer PipeWire takes back (a new format, the stream's end): never queued or read again.
static void on_remove_buffer(void *data, struct pw_buffer *buffer) {
    struct fr_pw_stream *s = data;
    if (s->pending == buffer) s->pending = NULL;
    if (s->held == buffer) s->held = NULL;
    for (int i = 0; i < FR_PW_MAPPINGS; i++) if (s->mappings[i].buffer == buffer) unmap_whole(s, &s->mappings[i]);
}

/// Data `index` of `buffer` mapped whole: the mapping kept from an earlier
/// picture, or a new one when it is small enough and room is left; NULL when
/// it is read a band at a time.
static struct fr_pw_mapping *mapped_whole(struct fr_pw_stream *s, struct pw_buffer *buffer, uint32_t index) {
    struct fr_pw_mapping *free_slot = NULL;
    for (int i = 0; i < FR_PW_MAPPINGS; i++) {
        if (s->mappings[i].buffer == buffer && s->mappings[i].data == index) return &s->mappings[i];
        if (s->mappings[i].buffer == NULL && free_slot == NULL) free_slot = &s->mappings[i];
    }
    struct spa_data *d = &buffer->buffer->datas[index];
    size_t page = (size_t)sysconf(_SC_PAGESIZE), lead = d->mapoffset % page, size = lead + d->maxsize;
    struct stat file;
    if (free_slot == NULL || d->maxsize > FR_PW_MAPPED_EACH || s->mapped_bytes + size > FR_PW_MAPPED_MOST ||
        fstat((int)d->fd, &file) != 0 || (uint64_t)file.st_size < (uint64_t)d->mapoffset + d->maxsize) return NULL;
    void *base = mmap(NULL, size, PROT_READ, MAP_SHARED, (int)d->fd, (off_t)(d->mapoffset - lead));
    if (base == MAP_FAILED) return NULL;
    int guard = segment_guard_register(base, size);
    if (guard < 0) {
        munmap(base, size);
        return NULL;
    }
    *free_slot = (struct fr_pw_mapping){buffer, index, base, size, lead, guard, 0};
    s->mapped_bytes += size;
    return free_slot;
}

static const struct pw_stream_events stream_events = {
    PW_VERSION_STREAM_EVENTS,
    .state_changed = on_state_changed,
    .param_changed = on_param_changed,
    .remove_buffer = on_remove_buffer,
    .process = on_process,
};

/// Unmaps the rows mapped now: 1 when every read of them found the buffer
/// whole, 0 (and the stream failed) when the node shrank it under us.
static int unmap_window(struct fr_pw_stream *s) {
    int whole = 1;
    for (int p = 0; p < 3; p++) {
        if (s->guard[p] >= 0) {
            if (segment_guard_faults(s->guard[p]) > 0) whole = 0;
            segment_guard_unregister(s->guard[p]);
            s->guard[p] = -1;
        }
        if (s->window[p]) munmap(s->window[p], s->window_size[p]);
        s->window[p] = NULL;
        s->window_size[p] = 0;
    }
    // The whole mappings read since the last look (the held buffer's).
    for (int i = 0; i < FR_PW_MAPPINGS; i++) {
        struct fr_pw_mapping *m = &s->mappings[i];
        if (m->buffer == NULL) continue;
        uint32_t faults = segment_guard_faults(m->guard);
        if (faults != m->faults) whole = 0;
        m->faults = faults;
    }
    if (!whole) fail(s, FR_PW_FAILED, "the PipeWire node shrank a buffer while we read it (a memfd not sealed against that): its pictures cannot be read");
    return whole;
}

static int pw_initialized;

fr_pw_stream *fr_pw_stream_open(int fd, uint32_t node, char *error, size_t error_size) {
    if (!pw_initialized) {
        pw_init(NULL, NULL);
        pw_initialized = 1;
    }
    struct fr_pw_stream *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(error, error_size, "out of memory");
        if (fd >= 0) close(fd);
        return NULL;
    }
    s->node = node;
    for (int p = 0; p < 3; p++) s->guard[p] = -1;
    if (segment_guard_install() != 0) {
        snprintf(error, error_size, "cannot guard PipeWire's buffers against SIGBUS: %s", strerror(errno));
        if (fd >= 0) close(fd);
        free(s);
        return NULL;
    }
    s->loop = pw_thread_loop_new("frame-relay-pipewire", NULL);
    s->context = s->loop ? pw_context_new(pw_thread_loop_get_loop(s->loop), NULL, 0) : NULL;
    if (s->context == NULL || pw_thread_loop_start(s->loop) < 0) {
        snprintf(error, error_size, "cannot start a PipeWire loop: %s", strerror(errno));
        if (fd >= 0) close(fd);
        fr_pw_stream_close(s);
        return NULL;
    }
    pw_thread_loop_lock(s->loop);
    s->core = fd >= 0 ? pw_context_connect_fd(s->context, fd, NULL, 0) : pw_context_connect(s->context, NULL, 0);
    if (s->core == NULL) {
        // libpipewire says EHOSTDOWN ("Host is down") when no daemon listens at the socket it looked for.
        snprintf(error, error_size, "cannot connect to PipeWire (%s): is the pipewire daemon running in this session?",
                 errno == EHOSTDOWN || errno == ENOENT || errno == ECONNREFUSED ? "no daemon at its socket" : strerror(errno));
        pw_thread_loop_unlock(s->loop);
        fr_pw_stream_close(s);
        return NULL;
    }
    pw_core_add_listener(s->core, &s->core_listener, &core_events, s);
    // Is the node there, and a video source? One round trip through the registry says.
    s->registry = pw_core_get_registry(s->core, PW_VERSION_REGISTRY, 0);
    pw_registry_add_listener(s->registry, &s->registry_listener, &registry_events, s);
    s->sync_seq = pw_core_sync(s->core, PW_ID_CORE, 0);
    struct timespec deadline;
    pw_thread_loop_get_time(s->loop, &deadline, 5 * SPA_NSEC_PER_SEC);
    while (!s->synced && s->state != FR_PW_FAILED) {
        if (pw_thread_loop_timed_wait_full(s->loop, &deadline) != 0) break;
    }
    if (!s->synced || s->state == FR_PW_FAILED) {
        snprintf(error, error_size, "%s", s->state == FR_PW_FAILED ? s->error : "PipeWire did not answer within 5 s");
        pw_thread_loop_unlock(s->loop);
        fr_pw_stream_close(s);
        return NULL;
    }
    if (!s->node_seen || !s->node_is_video) {
        if (s->node_seen) snprintf(error, error_size, "PipeWire node %u is not a video source", node);
        else if (s->other_type[0]) snprintf(error, error_size, "PipeWire object %u is a %s, not a node (pw-cli ls Node lists the nodes)", node, s->other_type);
        else snprintf(error, error_size, "PipeWire has no node %u", node);
        pw_thread_loop_unlock(s->loop);
        fr_pw_stream_close(s);
        return NULL;
    }
    // The session manager links us to the node its serial names (an id there would be taken for a serial).
    struct pw_properties *props = pw_properties_new(PW_KEY_MEDIA_TYPE, "Video", PW_KEY_MEDIA_CATEGORY, "Capture", PW_KEY_MEDIA_ROLE, "Screen", NULL);
    if (s->node_serial[0]) pw_properties_set(props, PW_KEY_TARGET_OBJECT, s->node_serial);
    s->stream = pw_stream_new(s->core, "frame-relay", props);
    pw_stream_add_listener(s->stream, &s->stream_listener, &stream_events, s);
    uint8_t storage[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(storage, sizeof storage);
    const struct spa_pod *params[1];
    params[0] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat,
        SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
        SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
        SPA_FORMAT_VIDEO_format, SPA_POD_CHOICE_ENUM_Id(5, SPA_VIDEO_FORMAT_BGRx, SPA_VIDEO_FORMAT_BGRx, SPA_VIDEO_FORMAT_BGRA,
                                                        SPA_VIDEO_FORMAT_I420, SPA_VIDEO_FORMAT_NV12),
        SPA_FORMAT_VIDEO_size, SPA_POD_CHOICE_RANGE_Rectangle(&SPA_RECTANGLE(1280, 720), &SPA_RECTANGLE(1, 1), &SPA_RECTANGLE(16383, 16383)),
        SPA_FORMAT_VIDEO_framerate, SPA_POD_CHOICE_RANGE_Fraction(&SPA_FRACTION(30, 1), &SPA_FRACTION(0, 1), &SPA_FRACTION(240, 1)));
    int connected = pw_stream_connect(s->stream, PW_DIRECTION_INPUT, s->node_serial[0] ? PW_ID_ANY : node,
                                      PW_STREAM_FLAG_AUTOCONNECT | PW_STREAM_FLAG_DONT_RECONNECT, params, 1);
    pw_thread_loop_unlock(s->loop);
    if (connected < 0) {
        snprintf(error, error_size, "cannot connect to PipeWire node %u: %s", node, spa_strerror(connected));
        fr_pw_stream_close(s);
        return NULL;
    }
    return s;
}

int fr_pw_stream_wait_format(fr_pw_stream *s, int timeout_ms, int *width, int *height) {
    pw_thread_loop_lock(s->loop);
    struct timespec deadline;
    pw_thread_loop_get_time(s->loop, &deadline, (int64_t)timeout_ms * SPA_NSEC_PER_MSEC);
    while (s->format == FR_PW_FORMAT_NONE && (s->state == FR_PW_CONNECTING || s->state == FR_PW_STREAMING || s->state == FR_PW_PAUSED)) {
        if (pw_thread_loop_timed_wait_full(s->loop, &deadline) != 0) break;
    }
    int known = s->format != FR_PW_FORMAT_NONE && s->state != FR_PW_FAILED && s->state != FR_PW_ENDED;
    *width = (int)s->info.size.width;
    *height = (int)s->info.size.height;
    pw_thread_loop_unlock(s->loop);
    return known;
}

int fr_pw_stream_wait_picture(fr_pw_stream *s, int timeout_ms) {
    pw_thread_loop_lock(s->loop);
    struct timespec deadline;
    pw_thread_loop_get_time(s->loop, &deadline, (int64_t)timeout_ms * SPA_NSEC_PER_MSEC);
    while (s->pending == NULL && !s->cursor_dirty && (s->state == FR_PW_CONNECTING || s->state == FR_PW_STREAMING || s->state == FR_PW_PAUSED)) {
        if (pw_thread_loop_timed_wait_full(s->loop, &deadline) != 0) break;
    }
    int there = s->pending != NULL || s->cursor_dirty;
    pw_thread_loop_unlock(s->loop);
    return there;
}

enum fr_pw_state fr_pw_stream_state(fr_pw_stream *s, char *error, size_t error_size) {
    pw_thread_loop_lock(s->loop);
    enum fr_pw_state state = s->state;
    if (error != NULL && error_size > 0) snprintf(error, error_size, "%s", s->error);
    pw_thread_loop_unlock(s->loop);
    return state;
}

/// The picture held into `frame`: its size (the crop's), format and planes' strides.
static void describe_held(struct fr_pw_stream *s, fr_pw_frame *frame) {
    frame->width = s->crop.width;
    frame->height = s->crop.height;
    frame->format = s->format;
    for (int p = 0; p < 3; p++) frame->strides[p] = p < plane_count(s->format) ? (int)s->planes[p].stride : 0;
}

/// The cursor into `frame`: where it falls in the picture, its image taken when it changed.
static void take_cursor(struct fr_pw_stream *s, fr_pw_frame *frame) {
    // The image's top-left in the picture, in 64 bits (a node may send any position and hotspot): drawn only where it touches the picture.
    int64_t x = (int64_t)s->cursor_x - s->hotspot_x - s->crop.x, y = (int64_t)s->cursor_y - s->hotspot_y - s->crop.y;
    int drawn = s->cursor_shown && s->cursor_width > 0 && x > -(int64_t)s->cursor_width && x < s->crop.width &&
                y > -(int64_t)s->cursor_height && y < s->crop.height;
    // A new image is taken when it is first drawn (it may come before any picture, or while the pointer is off it).
    if (s->cursor_image_new && drawn) {
        memcpy(s->cursor_taken, s->cursor_image, (size_t)s->cursor_width * s->cursor_height * 4);
        s->cursor_image_new = 0;
    }
    frame->cursor = drawn ? (fr_pw_rect){(int)x, (int)y, s->cursor_width, s->cursor_height} : (fr_pw_rect){0, 0, 0, 0};
    frame->cursor_changed = s->cursor_dirty;
    s->cursor_dirty = 0;
}

int fr_pw_stream_take(fr_pw_stream *s, fr_pw_frame *frame) {
    pw_thread_loop_lock(s->loop);
    if (s->pending == NULL) {
        // No new picture: the cursor alone, over the picture still held (before the first, nothing to take).
        int cursor = s->cursor_dirty && s->held != NULL;
        if (cursor) {
            describe_held(s, frame);
            frame->pts = -1;
            frame->delivered = -1;
            frame->damage_count = 0;
            frame->picture = 0;
            take_cursor(s, frame);
        }
        s->cursor_dirty = 0;
        pw_thread_loop_unlock(s->loop);
        return cursor;
    }
    unmap_window(s);
    if (s->held) pw_stream_queue_buffer(s->stream, s->held);
    s->held = s->pending;
    s->pending = NULL;
    // The chunks read once, and checked again: the node can still write them after on_process looked.
    if (!locate(s, s->held->buffer, s->planes)) {
        pw_stream_queue_buffer(s->stream, s->held);
        s->held = NULL;
        s->damage_count = -1;
        pw_thread_loop_unlock(s->loop);
        return 0;
    }
    // The picture is the buffer's crop where it has one within it (Mutter casts a window so), else all of it.
    int width = (int)s->info.size.width, height = (int)s->info.size.height;
    s->crop = (fr_pw_rect){0, 0, width, height};
    struct spa_meta_region *crop = spa_buffer_find_meta_data(s->held->buffer, SPA_META_VideoCrop, sizeof *crop);
    if (crop && spa_meta_region_is_valid(crop)) {
        int x = SPA_CLAMP(crop->region.position.x, 0, width), y = SPA_CLAMP(crop->region.position.y, 0, height);
        int w = SPA_MIN((int)SPA_MIN(crop->region.size.width, (uint32_t)INT32_MAX), width - x);
        int h = SPA_MIN((int)SPA_MIN(crop->region.size.height, (uint32_t)INT32_MAX), height - y);
        // A YUV crop starts on even rows and columns (its chroma's).
        if (s->format == FR_PW_FORMAT_I420 || s->format == FR_PW_FORMAT_NV12) w += x & 1, h += y & 1, x &= ~1, y &= ~1;
        if (w > 0 && h > 0) s->crop = (fr_pw_rect){x, y, w, h};
    }
    describe_held(s, frame);
    struct spa_meta_header *header = spa_buffer_find_meta_data(s->held->buffer, SPA_META_Header, sizeof *header);
    frame->pts = header ? header->pts : -1;
    frame->delivered = s->pending_delivered;
    // Damage is in the buffer's coordinates: moved to the picture's; a crop that moved makes all of it new.
    int moved = memcmp(&s->crop, &s->last_crop, sizeof s->crop) != 0;
    s->last_crop = s->crop;
    frame->damage_count = moved ? -1 : s->damage_count;
    for (int i = 0; i < frame->damage_count; i++) {
        frame->damage[i] = s->damage[i];
        frame->damage[i].x -= s->crop.x;
        frame->damage[i].y -= s->crop.y;
    }
    s->damage_count = 0;
    frame->picture = 1;
    take_cursor(s, frame);
    pw_thread_loop_unlock(s->loop);
    return 1;
}

int fr_pw_stream_release_rows(fr_pw_stream *s) {
    pw_thread_loop_lock(s->loop);
    int whole = unmap_window(s);
    pw_thread_loop_unlock(s->loop);
    return whole;
}

const uint8_t *fr_pw_stream_cursor_image(fr_pw_stream *s) { return s->cursor_taken; }

int fr_pw_stream_rows(fr_pw_stream *s, int y, int rows, const uint8_t *planes[3]) {
    pw_thread_loop_lock(s->loop);
    int count = plane_count(s->format), mapped = 0;
    for (int p = 0; p < 3; p++) planes[p] = NULL;
    int yuv = s->format == FR_PW_FORMAT_I420 || s->format == FR_PW_FORMAT_NV12;
    if (unmap_window(s) && s->state != FR_PW_FAILED && s->held != NULL && y >= 0 && rows > 0 && y + rows <= s->crop.height && !(yuv && (y & 1))) {
        for (mapped = 0; mapped < count; mapped++) {
            struct fr_pw_plane *plane = &s->planes[mapped];
            struct spa_data *d = &s->held->buffer->datas[plane->data];
            // This plane's rows for the band from the crop's corner (a chroma plane's half: both start even).
            size_t first = mapped ? (size_t)(s->crop.y + y) / 2 : (size_t)(s->crop.y + y), count_rows = plane_rows(mapped, rows);
            size_t into = plane->offset + first * plane->stride + plane_bytes(s->format, mapped, s->crop.x);
            size_t length = (count_rows - 1) * plane->stride + plane_bytes(s->format, mapped, s->crop.width);
            if (d->type == SPA_DATA_MemPtr) {
                planes[mapped] = (const uint8_t *)d->data + into;
                continue;
            }
            struct fr_pw_mapping *whole_data = mapped_whole(s, s->held, plane->data);
            if (whole_data) {
                planes[mapped] = whole_data->base + whole_data->lead + into;
                continue;
            }
            // The band's bytes from a page boundary: only they come into memory (populated at once, not fault by fault).
            size_t start = (size_t)d->mapoffset + into;
            size_t page = (size_t)sysconf(_SC_PAGESIZE);
            size_t aligned = start / page * page;
            size_t size = start - aligned + length;
            // Never past the file's end (reading there would be SIGBUS): a node that says its buffers are larger than they are gets no rows.
            struct stat file;
            void *window = fstat((int)d->fd, &file) == 0 && (uint64_t)file.st_size >= aligned + size
                ? mmap(NULL, size, PROT_READ, MAP_SHARED | MAP_POPULATE, (int)d->fd, (off_t)aligned) : MAP_FAILED;
            if (window == MAP_FAILED) break;
            s->window[mapped] = window;
            s->window_size[mapped] = size;
            if ((s->guard[mapped] = segment_guard_register(window, size)) < 0) break;
            planes[mapped] = (const uint8_t *)window + (start - aligned);
        }
    }
    int whole = count > 0 && mapped == count;
    if (!whole) unmap_window(s);
    pw_thread_loop_unlock(s->loop);
    return whole;
}

void fr_pw_stream_close(fr_pw_stream *s) {
    if (s == NULL) return;
    if (s->loop) pw_thread_loop_lock(s->loop);
    unmap_window(s);
    if (s->stream) pw_stream_destroy(s->stream);
    for (int i = 0; i < FR_PW_MAPPINGS; i++) if (s->mappings[i].buffer) unmap_whole(s, &s->mappings[i]);
    if (s->registry) pw_proxy_destroy((struct pw_proxy *)s->registry);
    if (s->core) pw_core_disconnect(s->core);
    if (s->loop) {
        pw_thread_loop_unlock(s->loop);
        pw_thread_loop_stop(s->loop);
    }
    if (s->context) pw_context_destroy(s->context);
    if (s->loop) pw_thread_loop_destroy(s->loop);
    free(s);
}
