// A PipeWire video source the tests control, as a compositor casting with
// its cursor as metadata (a cast's `cursor-mode` 2): a still gray 320x240
// BGRx desktop, and beside it (SPA_META_Cursor) a 16x16 red pointer, hotspot
// (3, 3), its image as RGBA as Mutter sends it. The pointer moves right 1 px
// a frame from (40, 100) for 90 frames, then rests at (200, 120). The picture
// is sent once a second; every other buffer carries the cursor alone (no
// picture: chunk size 0), as a compositor does when only the pointer moved.
// Ends SECONDS after its stream first streams (10 s later if it never
// does), or when its stream fails. SwiftPM does not build it: the test
// compiles it. MODE makes it a node that misbehaves:
//   oversized   a picture every frame whose chunk names a stride twice its
//               row, so none fits its buffer;
//   shrinking   a picture every frame in memfds of its own that a thread
//               keeps shrinking to nothing and growing back (not sealed);
//   image-first the pointer rests at (100, 100) and its image comes once,
//               in a buffer with no picture, before the first picture;
//   resize      a second in, the picture becomes 480x360 (the stream's
//               format renegotiated, as a monitor changing its mode).
//
//     pipewire-cursor-source SECONDS [MODE]

#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <pipewire/pipewire.h>
#include <spa/buffer/meta.h>
#include <spa/param/video/format-utils.h>

enum { POINTER = 16, RATE = 30 };
/// The picture's size (`resize` makes it 480x360 a second in).
static int WIDTH = 320, HEIGHT = 240;
#define CURSOR_META_SIZE (sizeof(struct spa_meta_cursor) + sizeof(struct spa_meta_bitmap) + POINTER * POINTER * 4)

struct source {
    struct pw_main_loop *loop;
    struct pw_stream *stream;
    struct spa_hook listener;
    struct spa_source *timer;
    uint64_t frame, frames, ticks;
    int streaming;
    const char *mode;
    /// shrinking: the buffers' memfds, and a lock held while a picture is written (the file whole then).
    int fds[8];
    pthread_mutex_t lock;
    volatile int running;
};

static int mode(struct source *s, const char *name) { return strcmp(s->mode, name) == 0; }

/// The one format offered: BGRx at the picture's size, RATE frames/s.
static const struct spa_pod *video_format(struct spa_pod_builder *b) {
    return spa_pod_builder_add_object(b, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat,
        SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
        SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
        SPA_FORMAT_VIDEO_format, SPA_POD_Id(SPA_VIDEO_FORMAT_BGRx),
        SPA_FORMAT_VIDEO_size, SPA_POD_Rectangle(&SPA_RECTANGLE(WIDTH, HEIGHT)),
        SPA_FORMAT_VIDEO_framerate, SPA_POD_Fraction(&SPA_FRACTION(RATE, 1)));
}

/// shrinking: a buffer of our own, in a memfd nobody sealed.
static void add_buffer(void *data, struct pw_buffer *b) {
    struct source *s = data;
    if (!mode(s, "shrinking")) return;
    struct spa_data *d = &b->buffer->datas[0];
    int fd = memfd_create("pipewire-cursor-source", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, WIDTH * HEIGHT * 4) != 0) return;
    d->type = SPA_DATA_MemFd;
    d->flags = SPA_DATA_FLAG_READWRITE;
    d->fd = fd;
    d->mapoffset = 0;
    d->maxsize = WIDTH * HEIGHT * 4;
    d->data = mmap(NULL, d->maxsize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < 8; i++) if (s->fds[i] < 0) { s->fds[i] = fd; break; }
    pthread_mutex_unlock(&s->lock);
}

static void remove_buffer(void *data, struct pw_buffer *b) {
    struct source *s = data;
    if (!mode(s, "shrinking")) return;
    struct spa_data *d = &b->buffer->datas[0];
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < 8; i++) if (s->fds[i] == d->fd) s->fds[i] = -1;
    pthread_mutex_unlock(&s->lock);
    if (d->data) munmap(d->data, d->maxsize);
    close((int)d->fd);
}

/// shrinking: every buffer's file cut to nothing and grown back, over and over.
static void *shrink(void *data) {
    struct source *s = data;
    for (int i = 0; s->running; i++) {
        pthread_mutex_lock(&s->lock);
        for (int j = 0; j < 8; j++) if (s->fds[j] >= 0 && ftruncate(s->fds[j], i & 1 ? WIDTH * HEIGHT * 4 : 0) != 0) s->fds[j] = -1;
        pthread_mutex_unlock(&s->lock);
        usleep(200);
    }
    return NULL;
}

static void send_frame(void *data, uint64_t expirations) {
    struct source *s = data;
    (void)expirations;
    // Frames by the clock once streaming, a buffer to send or not; and with no consumer at all, an end 10 s later.
    if (s->frame >= s->frames || ++s->ticks >= s->frames + 10 * RATE) {
        pw_main_loop_quit(s->loop);
        return;
    }
    if (!s->streaming) return;
    uint64_t n = s->frame++;
    if (mode(s, "resize") && n == RATE) {
        WIDTH = 480, HEIGHT = 360;
        uint8_t storage[1024];
        struct spa_pod_builder b = SPA_POD_BUILDER_INIT(storage, sizeof storage);
        const struct spa_pod *params[1] = {video_format(&b)};
        pw_stream_update_params(s->stream, params, 1);
        return;
    }
    struct pw_buffer *b = pw_stream_dequeue_buffer(s->stream);
    if (b == NULL) return;
    struct spa_buffer *buffer = b->buffer;
    struct spa_data *d = &buffer->datas[0];
    struct spa_meta_header *header = spa_buffer_find_meta_data(buffer, SPA_META_Header, sizeof *header);
    if (header) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        header->pts = (int64_t)now.tv_sec * SPA_NSEC_PER_SEC + now.tv_nsec;
        header->flags = 0;
        header->seq = n;
        header->dts_offset = 0;
    }
    int picture = mode(s, "image-first") ? n >= RATE && n % RATE == 0 : n % RATE == 0 || mode(s, "oversized") || mode(s, "shrinking");
    if (picture && d->data != NULL) {
        pthread_mutex_lock(&s->lock);
        for (int i = 0; i < 8; i++) if (s->fds[i] >= 0 && ftruncate(s->fds[i], WIDTH * HEIGHT * 4) != 0) s->fds[i] = -1;
        memset(d->data, 0x80, (size_t)WIDTH * HEIGHT * 4);
        pthread_mutex_unlock(&s->lock);
        d->chunk->offset = 0;
        d->chunk->stride = WIDTH * 4 * (mode(s, "oversized") ? 2 : 1);
        d->chunk->size = WIDTH * HEIGHT * 4;
    } else {
        d->chunk->size = 0;
    }
    struct spa_meta *meta = spa_buffer_find_meta(buffer, SPA_META_Cursor);
    if (meta && meta->size >= CURSOR_META_SIZE) {
        struct spa_meta_cursor *cursor = meta->data;
        cursor->id = 1;
        cursor->flags = 0;
        cursor->position.x = mode(s, "image-first") ? 100 : n < 90 ? 40 + (int32_t)n : 200;
        cursor->position.y = mode(s, "image-first") ? 100 : n < 90 ? 100 : 120;
        cursor->hotspot.x = 3;
        cursor->hotspot.y = 3;
        // The image with the picture, as a compositor sends it when it changes; no new image otherwise.
        cursor->bitmap_offset = 0;
        if (mode(s, "image-first") ? n == 5 : n % RATE == 0) {
            cursor->bitmap_offset = sizeof *cursor;
            struct spa_meta_bitmap *bitmap = SPA_PTROFF(cursor, cursor->bitmap_offset, struct spa_meta_bitmap);
            bitmap->format = SPA_VIDEO_FORMAT_RGBA;
            bitmap->size = SPA_RECTANGLE(POINTER, POINTER);
            bitmap->stride = POINTER * 4;
            bitmap->offset = sizeof *bitmap;
            uint8_t *pixel = SPA_PTROFF(bitmap, bitmap->offset, uint8_t);
            for (int i = 0; i < POINTER * POINTER; i++, pixel += 4) pixel[0] = 255, pixel[1] = 0, pixel[2] = 0, pixel[3] = 255;
        }
    }
    pw_stream_queue_buffer(s->stream, b);
}

static void on_state_changed(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error) {
    struct source *s = data;

    if (state == PW_STREAM_STATE_STREAMING) s->streaming = 1;  // from here on frames count, paused or not
    if (state == PW_STREAM_STATE_ERROR || (state == PW_STREAM_STATE_UNCONNECTED && old != PW_STREAM_STATE_UNCONNECTED)) {
        fprintf(stderr, "pipewire-cursor-source: the stream %s%s\n", state == PW_STREAM_STATE_ERROR ? "failed: " : "was disconnected", error ? error : "");
        pw_main_loop_quit(s->loop);
    }
}

static void on_param_changed(void *data, uint32_t id, const struct spa_pod *param) {
    struct source *s = data;
    if (param == NULL || id != SPA_PARAM_Format) return;
    uint8_t storage[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(storage, sizeof storage);
    const struct spa_pod *params[3];
    params[0] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
        SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(4, 2, 8),
        SPA_PARAM_BUFFERS_blocks, SPA_POD_Int(1),
        SPA_PARAM_BUFFERS_size, SPA_POD_Int(WIDTH * HEIGHT * 4),
        SPA_PARAM_BUFFERS_stride, SPA_POD_Int(WIDTH * 4),
        SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int(1 << SPA_DATA_MemFd));
    params[1] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header),
        SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
    params[2] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Cursor),
        SPA_PARAM_META_size, SPA_POD_Int(CURSOR_META_SIZE));
    pw_stream_update_params(s->stream, params, 3);
}

static const struct pw_stream_events stream_events = {
    PW_VERSION_STREAM_EVENTS,
    .state_changed = on_state_changed,
    .param_changed = on_param_changed,
    .add_buffer = add_buffer,
    .remove_buffer = remove_buffer,
};

int main(int argc, char *argv[]) {
    const char *modes[] = {"", "oversized", "shrinking", "image-first", "resize"};
    int known = 0;
    for (int i = 0; i < 5; i++) known |= argc == 3 && strcmp(argv[2], modes[i]) == 0;
    if (argc < 2 || argc > 3 || atof(argv[1]) <= 0 || (argc == 3 && !known)) {
        fprintf(stderr, "usage: pipewire-cursor-source SECONDS [oversized|shrinking|image-first|resize]\n");
        return 2;
    }
    struct source s = {.frames = (uint64_t)(atof(argv[1]) * RATE), .mode = argc == 3 ? argv[2] : "", .running = 1};
    pthread_mutex_init(&s.lock, NULL);
    for (int i = 0; i < 8; i++) s.fds[i] = -1;
    pthread_t shrinker;
    if (mode(&s, "shrinking")) pthread_create(&shrinker, NULL, shrink, &s);
    pw_init(&argc, &argv);
    s.loop = pw_main_loop_new(NULL);
    s.timer = pw_loop_add_timer(pw_main_loop_get_loop(s.loop), send_frame, &s);
    struct timespec first = {0, 1}, interval = {0, SPA_NSEC_PER_SEC / RATE};
    pw_loop_update_timer(pw_main_loop_get_loop(s.loop), s.timer, &first, &interval, false);
    s.stream = pw_stream_new_simple(pw_main_loop_get_loop(s.loop), "frame-relay-test-cursor",
        pw_properties_new(PW_KEY_MEDIA_CLASS, "Video/Source", PW_KEY_MEDIA_TYPE, "Video", PW_KEY_MEDIA_CATEGORY, "Source", NULL),
        &stream_events, &s);
    uint8_t storage[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(storage, sizeof storage);
    const struct spa_pod *params[1] = {video_format(&b)};
    enum pw_stream_flags flags = PW_STREAM_FLAG_DRIVER | (mode(&s, "shrinking") ? PW_STREAM_FLAG_ALLOC_BUFFERS : PW_STREAM_FLAG_MAP_BUFFERS);
    if (pw_stream_connect(s.stream, PW_DIRECTION_OUTPUT, PW_ID_ANY, flags, params, 1) < 0) {
        fprintf(stderr, "pipewire-cursor-source: cannot connect to PipeWire\n");
        return 1;
    }
    pw_main_loop_run(s.loop);
    s.running = 0;
    if (mode(&s, "shrinking")) pthread_join(shrinker, NULL);
    pw_stream_destroy(s.stream);
    pw_main_loop_destroy(s.loop);
    pw_deinit();
    return 0;
}
