#include "pipewire_stream.h"

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
    /// Its object.serial: what a session manager's `target.object` names (not the id).
    char node_serial[32];
    struct spa_video_info_raw info;
    enum fr_pw_format format;
    enum fr_pw_state state;
    int streamed;
    char error[256];
    /// The newest whole buffer not yet taken, and the one taken (mapped until the next take).
    struct pw_buffer *pending, *held;
    /// The part of `held` that is the picture (SPA_META_VideoCrop: a window
    /// in a larger stream), and the part the take before it was.
    fr_pw_rect crop, last_crop;
    /// The rows of `held` mapped now (fr_pw_stream_rows): the mapping's start and length.
    void *window;
    size_t window_size;
    /// What changed since the last take: rectangles, or -1 for the whole picture.
    int damage_count;
    /// The last buffer's SPA_META_Header seq: a gap is a picture PipeWire
    /// recycled unseen, whose damage we never had (so all of it is new).
    uint64_t last_seq;
    int have_seq;
    /// The picture taken, as read once at the take (its chunk lives in memory the node may still write).
    size_t held_offset, held_stride;
    fr_pw_rect damage[FR_PW_MAX_RECTS];
};

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
    if (id != s->node || strcmp(type, PW_TYPE_INTERFACE_Node) != 0) return;
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
        fail(s, FR_PW_FAILED, "the PipeWire node offers no raw video we can take (BGRx or BGRA)");
        return;
    }
    enum fr_pw_format format = info.format == SPA_VIDEO_FORMAT_BGRx ? FR_PW_FORMAT_BGRX : info.format == SPA_VIDEO_FORMAT_BGRA ? FR_PW_FORMAT_BGRA : FR_PW_FORMAT_NONE;
    if (format == FR_PW_FORMAT_NONE) {
        char text[128];
        snprintf(text, sizeof text, "the PipeWire node's format %s is not one we take (BGRx or BGRA)", format_name(info.format));
        fail(s, FR_PW_FAILED, text);
        return;
    }
    s->info = info;
    s->format = format;
    s->damage_count = -1;  // a new size: all of it
    uint8_t storage[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(storage, sizeof storage);
    const struct spa_pod *params[4];
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
    pw_stream_update_params(s->stream, params, 4);
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
    if (s->damage_count < 0) return;
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
        s->damage[s->damage_count++] = (fr_pw_rect){region->region.position.x, region->region.position.y,
                                                    (int)region->region.size.width, (int)region->region.size.height};
    }
}

/// Whether a buffer holds a whole picture we can read.
static int readable(struct fr_pw_stream *s, struct spa_buffer *buffer) {
    struct spa_meta_header *header = spa_buffer_find_meta_data(buffer, SPA_META_Header, sizeof *header);
    if (header && (header->flags & SPA_META_HEADER_FLAG_CORRUPTED)) return 0;
    if (buffer->n_datas < 1) return 0;
    struct spa_data *d = &buffer->datas[0];
    if (!(d->type == SPA_DATA_MemPtr && d->data != NULL) && !(d->type == SPA_DATA_MemFd && d->fd >= 0)) {
        fail(s, FR_PW_FAILED, "the PipeWire node sends only buffers we cannot map (DMA-BUF): capture needs shared-memory buffers");
        return 0;
    }
    if (d->chunk->size == 0) return 0;  // a cursor-only update: no picture
    int stride = d->chunk->stride > 0 ? d->chunk->stride : (int)s->info.size.width * 4;
    if (stride < (int)s->info.size.width * 4) return 0;
    if ((uint64_t)d->chunk->offset + (uint64_t)stride * s->info.size.height > d->maxsize) return 0;
    return 1;
}

static void on_process(void *data) {
    struct fr_pw_stream *s = data;
    struct pw_buffer *buffer, *newest = NULL;
    while ((buffer = pw_stream_dequeue_buffer(s->stream)) != NULL) {
        if (s->format == FR_PW_FORMAT_NONE) {
            pw_stream_queue_buffer(s->stream, buffer);
            continue;
        }
        // Every buffer's damage counts, a picture we skip too: what it changed is in the next one.
        accumulate(s, buffer->buffer);
        if (!readable(s, buffer->buffer)) {
            pw_stream_queue_buffer(s->stream, buffer);
            continue;
        }
        if (newest) pw_stream_queue_buffer(s->stream, newest);
        newest = buffer;
    }
    if (newest == NULL) return;
    // A newer whole picture replaces the one not yet taken: its damage was added above.
    if (s->pending) pw_stream_queue_buffer(s->stream, s->pending);
    s->pending = newest;
    pw_thread_loop_signal(s->loop, false);
}

/// A buffer PipeWire takes back (a new format, the stream's end): never queued or read again.
static void on_remove_buffer(void *data, struct pw_buffer *buffer) {
    struct fr_pw_stream *s = data;
    if (s->pending == buffer) s->pending = NULL;
    if (s->held == buffer) s->held = NULL;
}

static const struct pw_stream_events stream_events = {
    PW_VERSION_STREAM_EVENTS,
    .state_changed = on_state_changed,
    .param_changed = on_param_changed,
    .remove_buffer = on_remove_buffer,
    .process = on_process,
};

static void unmap_window(struct fr_pw_stream *s) {
    if (s->window) munmap(s->window, s->window_size);
    s->window = NULL;
    s->window_size = 0;
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
        snprintf(error, error_size, "cannot connect to PipeWire (%s): is the pipewire daemon running in this session?", strerror(errno));
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
        snprintf(error, error_size, s->node_seen ? "PipeWire node %u is not a video source" : "PipeWire has no node %u", node);
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
        SPA_FORMAT_VIDEO_format, SPA_POD_CHOICE_ENUM_Id(3, SPA_VIDEO_FORMAT_BGRx, SPA_VIDEO_FORMAT_BGRx, SPA_VIDEO_FORMAT_BGRA),
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
    while (s->pending == NULL && (s->state == FR_PW_CONNECTING || s->state == FR_PW_STREAMING || s->state == FR_PW_PAUSED)) {
        if (pw_thread_loop_timed_wait_full(s->loop, &deadline) != 0) break;
    }
    int there = s->pending != NULL;
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

int fr_pw_stream_take(fr_pw_stream *s, fr_pw_frame *frame) {
    pw_thread_loop_lock(s->loop);
    if (s->pending == NULL) {
        pw_thread_loop_unlock(s->loop);
        return 0;
    }
    unmap_window(s);
    if (s->held) pw_stream_queue_buffer(s->stream, s->held);
    s->held = s->pending;
    s->pending = NULL;
    struct spa_data *d = &s->held->buffer->datas[0];
    // The chunk read once, and checked again: the node can still write it after on_process looked.
    int32_t chunk_stride = d->chunk->stride;
    size_t offset = d->chunk->offset, stride = chunk_stride > 0 ? (size_t)chunk_stride : (size_t)s->info.size.width * 4;
    if (stride < (size_t)s->info.size.width * 4 || s->info.size.height == 0 ||
        offset + stride * (s->info.size.height - 1) + (size_t)s->info.size.width * 4 > d->maxsize) {
        pw_stream_queue_buffer(s->stream, s->held);
        s->held = NULL;
        s->damage_count = -1;
        pw_thread_loop_unlock(s->loop);
        return 0;
    }
    s->held_offset = offset;
    s->held_stride = stride;
    // The picture is the buffer's crop where it has one within it (Mutter casts a window so), else all of it.
    int width = (int)s->info.size.width, height = (int)s->info.size.height;
    s->crop = (fr_pw_rect){0, 0, width, height};
    struct spa_meta_region *crop = spa_buffer_find_meta_data(s->held->buffer, SPA_META_VideoCrop, sizeof *crop);
    if (crop && spa_meta_region_is_valid(crop)) {
        int x = SPA_CLAMP(crop->region.position.x, 0, width), y = SPA_CLAMP(crop->region.position.y, 0, height);
        int w = SPA_MIN((int)SPA_MIN(crop->region.size.width, (uint32_t)INT32_MAX), width - x);
        int h = SPA_MIN((int)SPA_MIN(crop->region.size.height, (uint32_t)INT32_MAX), height - y);
        if (w > 0 && h > 0) s->crop = (fr_pw_rect){x, y, w, h};
    }
    frame->width = s->crop.width;
    frame->height = s->crop.height;
    frame->stride = (int)stride;
    frame->format = s->format;
    struct spa_meta_header *header = spa_buffer_find_meta_data(s->held->buffer, SPA_META_Header, sizeof *header);
    frame->pts = header ? header->pts : -1;
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
    pw_thread_loop_unlock(s->loop);
    return 1;
}

const uint8_t *fr_pw_stream_rows(fr_pw_stream *s, int y, int rows) {
    pw_thread_loop_lock(s->loop);
    unmap_window(s);
    const uint8_t *row = NULL;
    if (s->held != NULL && y >= 0 && rows > 0 && y + rows <= s->crop.height) {
        struct spa_data *d = &s->held->buffer->datas[0];
        size_t stride = s->held_stride;
        if (d->type == SPA_DATA_MemPtr) {
            row = (const uint8_t *)d->data + s->held_offset + (size_t)(s->crop.y + y) * stride + (size_t)s->crop.x * 4;
        } else {
            // The band's bytes from a page boundary: only they come into memory (populated at once, not fault by fault).
            size_t start = (size_t)d->mapoffset + s->held_offset + (size_t)(s->crop.y + y) * stride + (size_t)s->crop.x * 4;
            size_t page = (size_t)sysconf(_SC_PAGESIZE);
            size_t aligned = start / page * page;
            size_t size = start - aligned + (size_t)(rows - 1) * stride + (size_t)s->crop.width * 4;
            // Never past the file's end (reading there would be SIGBUS): a node that says its buffers are larger than they are gets no rows.
            struct stat file;
            void *window = fstat((int)d->fd, &file) == 0 && (uint64_t)file.st_size >= aligned + size
                ? mmap(NULL, size, PROT_READ, MAP_SHARED | MAP_POPULATE, (int)d->fd, (off_t)aligned) : MAP_FAILED;
            if (window != MAP_FAILED) {
                s->window = window;
                s->window_size = size;
                row = (const uint8_t *)window + (start - aligned);
            }
        }
    }
    pw_thread_loop_unlock(s->loop);
    return row;
}

void fr_pw_stream_close(fr_pw_stream *s) {
    if (s == NULL) return;
    if (s->loop) pw_thread_loop_lock(s->loop);
    unmap_window(s);
    if (s->stream) pw_stream_destroy(s->stream);
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
