/// The viewer page: plays a share's live IVF with WebCodecs into a canvas,
/// or (`?mode=webrtc`) watches the share's Janus mountpoint over WebRTC,
/// and charts frames/s and latency from `/stats.json`. `?share=N` picks the
/// share; `?frames=N` stops after N decoded frames (for headless checks);
/// `?janus=URL` names Janus's HTTP API as the browser reaches it (default:
/// this page's host, at the port the host streams into). In WebRTC mode,
/// `?measure=1` logs each frame's stamp and the time it is shown on the
/// host's CLOCK_MONOTONIC (the page's clock calibrated through `/clock`),
/// and the receiver's `getStats()` every 5 s. It asks Janus for a playout
/// delay of 0 (the playout-delay RTP extension: each frame shown as soon as
/// it is decoded; scripts/janus-latency measured 10–16 ms less glass to
/// glass than Chromium's own jitter buffer, as many freezes on a lossy
/// link); `?playout=N` asks for N × 10 ms, `?playout=none` for none; `?relay=IP:VIEWER:JANUS` sends the
/// media through `frame-relay link-relay` (an impaired link), pointing
/// Janus's candidate at the relay's viewer side and ours at its Janus side.
/// Measuring, the page counts freezes by the subscriber's rule
/// (``freezeRule``) from the RTP timestamps of the frames it receives whole
/// (an encoded transform) and of those it shows, and logs the count with
/// `getStats()`' own.
enum ViewerPage {
    /// The subscriber's `FreezeDetector` in JavaScript, line for line (times
    /// in ms): a freeze is a wait between two frames shown longer than the
    /// host's gap from the first to the next frame it sent that the viewer
    /// received whole (their RTP timestamps) by max(2 × the host's usual
    /// gap, 150 ms). `FreezeRuleTests` runs it on the sequences the Swift
    /// type is tested on.
    static let freezeRule = """
        class FreezeDetector {
          constructor() { this.hostGaps = new Array(30).fill(0); this.count = 0; this.whole = new Array(64).fill(0); this.wholeCount = 0; this.last = null; this.freezes = 0; this.frozen = 0; }
          // A frame received whole (shown or not), with RTP timestamp `timestamp` (90 kHz).
          receivedWhole(timestamp) { this.whole[this.wholeCount % 64] = timestamp; this.wholeCount++; }
          // A frame shown with RTP timestamp `timestamp` that the viewer got at `now` (ms); true when the wait before it was a freeze.
          frame(now, timestamp) {
            const last = this.last;
            this.last = { arrival: now, timestamp: timestamp };
            if (last === null) return false;
            const viewerGap = now - last.arrival;
            // The first frame after the last one shown that came whole: this one, or one before it that could not be shown.
            let ticks = (timestamp - last.timestamp) | 0;
            for (let i = 0; i < Math.min(this.wholeCount, 64); i++) {
              const after = (this.whole[i] - last.timestamp) | 0;
              if (after > 0 && after < ticks) ticks = after;
            }
            // A timestamp that went back (a new stream) says nothing of the host's gap.
            const hostGap = ticks > 0 ? ticks / 90 : 0;
            const samples = Math.min(this.count, 30);
            let sum = 0;
            for (let i = 0; i < samples; i++) sum += this.hostGaps[i];
            this.hostGaps[this.count % 30] = hostGap;
            this.count++;
            if (viewerGap <= hostGap) return false;
            const usual = samples === 0 ? hostGap : Math.min(sum / samples, hostGap), excess = viewerGap - hostGap;
            if (excess < Math.max(2 * usual, 150)) return false;
            this.freezes++;
            this.frozen += excess;
            return true;
          }
        }
        """

    static func html(shares: [String]) -> String {
        let options = shares.enumerated().map { "<option value=\"\($0.offset)\">\($0.element)</option>" }.joined()
        return """
        <!doctype html>
        <html><head><meta charset="utf-8"><title>FrameRelay live</title>
        <style>
        body { font: 14px system-ui, sans-serif; margin: 16px; background: #111; color: #ddd; }
        #video { max-width: 100%; background: #000; display: block; margin: 8px 0; }
        .stats span { display: inline-block; min-width: 150px; margin-right: 12px; }
        .stats b { color: #fff; }
        #chart { background: #1a1a1a; display: block; margin: 8px 0; }
        #error { color: #f66; }
        #ended { display: none; color: #111; background: #fc6; padding: 6px 10px; margin: 8px 0; font-weight: bold; }
        .stale { opacity: 0.45; }
        </style></head>
        <body>
        <h3>FrameRelay live <select id="share">\(options)</select></h3>
        <div class="stats">
          <span>mode <b id="mode">WebCodecs</b></span>
          <span>decoded <b id="decoded">0</b></span>
          <span>stamp <b id="stamp">–</b></span>
          <span>first picture <b id="first">–</b></span>
          <span>host fps <b id="fps">–</b></span>
          <span>bitrate <b id="bitrate">–</b></span>
          <span>drops <b id="drops">–</b></span>
          <span><i id="stage">capture→encoded</i>, last second: p50 <b id="p50">–</b></span>
          <span>p99 <b id="p99">–</b></span>
        </div>
        <div id="ended"></div>
        <canvas id="chart" width="720" height="150"></canvas>
        <div id="error"></div>
        <canvas id="video" width="1280" height="720"></canvas>
        <video id="rtc" autoplay muted playsinline style="display:none; max-width:100%"></video>
        <script>
        \(freezeRule)
        const params = new URLSearchParams(location.search);
        const share = Number(params.get('share') || 0);
        const stopAfter = Number(params.get('frames') || 0);
        const $ = id => document.getElementById(id);
        $('share').value = share;
        $('share').onchange = e => { params.set('share', e.target.value); location.search = params; };
        const canvas = $('video'), ctx = canvas.getContext('2d');
        let decoded = 0, reader = null;
        window.framesDecoded = 0;
        const webrtc = params.get('mode') === 'webrtc';
        // WebCodecs only in a secure context (https or localhost); WebRTC works anywhere.
        if (!webrtc && !('VideoDecoder' in window)) { $('error').textContent = 'This browser has no WebCodecs VideoDecoder here (it needs https or localhost): open ?mode=webrtc with a Janus.'; }
        const decoder = webrtc || !('VideoDecoder' in window) ? null : new VideoDecoder({
          output: frame => {
            if (canvas.width !== frame.displayWidth) { canvas.width = frame.displayWidth; canvas.height = frame.displayHeight; }
            ctx.drawImage(frame, 0, 0); frame.close();
            decodedOne(null);
            if (stopAfter && decoded >= stopAfter && reader) { reader.cancel(); document.title = 'decoded ' + decoded; }
          },
          error: e => { $('error').textContent = 'decoder: ' + e.message; }
        });
        const started = performance.now();
        function decodedOne(stamp) {
          decoded++; window.framesDecoded = decoded; $('decoded').textContent = decoded;
          if (decoded === 1) $('first').textContent = (performance.now() - started).toFixed(0) + ' ms';
          if (stamp !== null) $('stamp').textContent = stamp;
          if (webrtc && (decoded % 30 === 0 || decoded === stopAfter)) console.log('webrtc frames=' + decoded + ' stamp=' + stamp + ' first=' + $('first').textContent);
        }
        if (decoder) decoder.configure({ codec: 'vp8' });
        async function play() {
          const response = await fetch('/stream.ivf?share=' + share);
          // No frame yet: wait for the first rather than calling the stream ended.
          if (response.status === 503) { $('error').textContent = 'waiting for the first frame…'; await new Promise(done => setTimeout(done, 1000)); return play(); }
          $('error').textContent = '';
          reader = response.body.getReader();
          let buffer = new Uint8Array(0), header = false, waitingForKey = true;
          for (;;) {
            const { value, done } = await reader.read();
            if (done) { if (!stopAfter || decoded < stopAfter) ended('the host closed the stream'); break; }
            const joined = new Uint8Array(buffer.length + value.length); joined.set(buffer); joined.set(value, buffer.length); buffer = joined;
            if (!header) { if (buffer.length < 32) continue; buffer = buffer.slice(32); header = true; }
            while (buffer.length >= 12) {
              const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
              const size = view.getUint32(0, true);
              if (buffer.length < 12 + size) break;
              const pts = Number(view.getBigUint64(4, true));
              const data = buffer.slice(12, 12 + size);
              buffer = buffer.slice(12 + size);
              const key = (data[0] & 1) === 0;
              if (waitingForKey && !key) continue;
              waitingForKey = false;
              decoder.decode(new EncodedVideoChunk({ type: key ? 'key' : 'delta', timestamp: Math.round(pts / 0.09), data }));
            }
          }
        }
        // WebRTC through Janus: the plain JSON API over HTTP (no library, nothing fetched from elsewhere).
        async function janus(url, body) {
          const reply = await (await fetch(url, { method: 'POST', body: JSON.stringify(Object.assign({ transaction: Math.random().toString(36).slice(2) }, body)) })).json();
          if (reply.janus === 'error') throw new Error('Janus ' + reply.error.code + ': ' + reply.error.reason);
          const data = reply.plugindata && reply.plugindata.data;
          if (data && data.error) throw new Error('Janus ' + data.error_code + ': ' + data.error);
          return reply;
        }
        function readStamp(video, probe) {
          const cell = Math.min(16, Math.floor(video.videoWidth / 24));
          if (cell < 2) return null;
          probe.width = cell * 24; probe.height = cell;
          const g = probe.getContext('2d', { willReadFrequently: true });
          g.drawImage(video, 0, 0, cell * 24, cell, 0, 0, cell * 24, cell);
          const pixels = g.getImageData(0, 0, cell * 24, cell).data;
          let number = 0;
          for (let bit = 0; bit < 24; bit++) {
            const at = (Math.floor(cell / 2) * cell * 24 + bit * cell + Math.floor(cell / 2)) * 4;
            number = number * 2 + ((pixels[at] + pixels[at + 1] + pixels[at + 2]) / 3 > 128 ? 1 : 0);
          }
          return number;
        }
        async function playWebRTC() {
          $('mode').textContent = 'WebRTC'; canvas.style.display = 'none';
          const video = $('rtc'), probe = document.createElement('canvas');
          video.style.display = 'block';
          const s = (await (await fetch('/stats.json')).json())[share];
          if (!s.janus) throw new Error('this share streams into no Janus (start the host with --janus)');
          const port = new URL(s.janus.janus).port || '80';
          const api = params.get('janus') || (location.protocol + '//' + location.hostname + ':' + port + '/janus');
          const session = (await janus(api, { janus: 'create' })).data.id, base = api + '/' + session;
          const handle = (await janus(base, { janus: 'attach', plugin: 'janus.plugin.streaming' })).data.id;
          setInterval(() => janus(base, { janus: 'keepalive' }).catch(() => {}), 25000);
          let offer = (await janus(base + '/' + handle, { janus: 'message', body: { request: 'watch', id: s.janus.id } })).jsep;
          while (!offer) {
            const event = await (await fetch(base + '?maxev=1&rid=' + Date.now())).json();
            const data = event.plugindata && event.plugindata.data;
            if (data && data.error) throw new Error('Janus ' + data.error_code + ': ' + data.error);
            offer = event.jsep;
          }
          const measure = params.get('measure') === '1';
          // The page's clock on the host's: the /clock reading of the fastest of 20 round trips, at its middle.
          let offset = null;
          if (measure) {
            let best = Infinity;
            for (let i = 0; i < 20; i++) {
              const before = performance.now();
              const monotonic = Number(await (await fetch('/clock', { cache: 'no-store' })).text()) / 1e6;
              const after = performance.now();
              if (after - before < best) { best = after - before; offset = monotonic - (before + after) / 2; }
            }
            console.log('webrtc clock offset=' + offset.toFixed(3) + ' ms, round trip ' + best.toFixed(3) + ' ms');
          }
          // Measuring, every frame received whole passes through the page on its way to the decoder (its RTP timestamp, for the freeze rule).
          const freezes = new FreezeDetector();
          const pc = new RTCPeerConnection(measure ? { encodedInsertableStreams: true } : {});
          pc.ontrack = e => {
            video.srcObject = e.streams[0] || new MediaStream([e.track]);
            if (!measure) return;
            const { readable, writable } = e.receiver.createEncodedStreams();
            readable.pipeThrough(new TransformStream({ transform(frame, out) { freezes.receivedWhole(frame.getMetadata().rtpTimestamp); out.enqueue(frame); } })).pipeTo(writable);
          };
          // Through a relay: every candidate named in the SDP becomes one of the relay's sides.
          const relay = params.get('relay') && params.get('relay').split(':');
          const via = (sdp, port) => sdp.replace(/^a=candidate:(\\S+) (\\d+) (\\S+) (\\d+) \\S+ \\d+ typ \\S+.*$/gm, 'a=candidate:$1 $2 $3 $4 ' + relay[0] + ' ' + port + ' typ host');
          if (relay) offer = { type: offer.type, sdp: via(offer.sdp, relay[1]) };
          await pc.setRemoteDescription(offer);
          await pc.setLocalDescription(await pc.createAnswer());
          await new Promise(done => {
            if (pc.iceGatheringState === 'complete') return done();
            pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === 'complete') done(); };
            setTimeout(done, 2000);
          });
          let answer = pc.localDescription.toJSON();
          if (relay) answer = { type: answer.type, sdp: via(answer.sdp.replace(/^a=candidate:.*\\.local .*\\r\\n/gm, ''), relay[2]) };
          if (relay && !/^a=candidate:/m.test(answer.sdp)) answer.sdp = answer.sdp.replace(/(a=mid:.*\\r\\n)/, '$1a=candidate:1 1 udp 2130706431 ' + relay[0] + ' ' + relay[2] + ' typ host\\r\\n');
          await janus(base + '/' + handle, { janus: 'message', body: { request: 'start' }, jsep: answer });
          if (params.get('playout') !== 'none') {
            const delay = Number(params.get('playout') || 0);
            await janus(base + '/' + handle, { janus: 'message', body: { request: 'configure', min_delay: delay, max_delay: delay } });
          }
          // Freezes by the subscriber's rule (the host's own gaps are none), beside getStats()' freezeCount.
          if (measure) setInterval(async () => {
            const stats = {};
            (await pc.getStats()).forEach(r => { if (r.type === 'inbound-rtp' && r.kind === 'video') Object.assign(stats, r); });
            stats.freezesByHostGaps = freezes.freezes;
            stats.freezesByHostGapsMs = Math.round(freezes.frozen);
            console.log('webrtc stats ' + JSON.stringify(stats));
          }, 5000);
          const onFrame = (now, metadata) => {
            if (measure && metadata.rtpTimestamp !== undefined) freezes.frame(metadata.presentationTime, metadata.rtpTimestamp);
            const stamp = readStamp(video, probe);
            // Each frame's stamp, then on the host's clock (ns): when it is shown, when it was handed to the compositor, and when its last packet came.
            if (measure && stamp !== null) console.log('webrtc shown ' + stamp + ' ' + [metadata.expectedDisplayTime, metadata.presentationTime, metadata.receiveTime]
              .map(t => t === undefined ? 0 : Math.round((t + offset) * 1e6)).join(' '));
            decodedOne(stamp);
            if (!stopAfter || decoded < stopAfter) video.requestVideoFrameCallback(onFrame);
            else document.title = 'decoded ' + decoded;
          };
          video.requestVideoFrameCallback(onFrame);
        }
        (webrtc ? playWebRTC() : play()).catch(e => {
          if (streamEnded) return;
          $('error').textContent = (webrtc ? 'webrtc: ' : 'stream: ') + e.message; console.log('viewer error: ' + e.message);
          if (!webrtc) ended('the stream broke off (' + e.message + ')');
        });
        // The host stopped: say so once, grey the last numbers, stop polling.
        let streamEnded = false;
        function ended(why) {
          if (streamEnded) return;
          streamEnded = true;
          $('ended').textContent = 'stream ended: ' + why + '. The figures above are the last the host gave.';
          $('ended').style.display = 'block';
          document.querySelector('.stats').classList.add('stale'); $('chart').classList.add('stale');
          document.title = 'FrameRelay: stream ended';
        }
        // One point each half second: a minute of history.
        const history = [], period = 0.5, span = 120;
        let lastBytes = null, lastTime = null, failures = 0;
        async function poll() {
          if (streamEnded) return;
          try {
            const all = await (await fetch('/stats.json')).json();
            failures = 0;
            const s = all[share];
            const now = performance.now();
            const bytes = s.encoded ? s.encoded.bytes : 0;
            if (lastBytes !== null) $('bitrate').textContent = ((bytes - lastBytes) * 8 / (now - lastTime)).toFixed(0) + ' kbit/s';
            lastBytes = bytes; lastTime = now;
            $('fps').textContent = s.fps.toFixed(1);
            $('drops').textContent = s.ring.dropped + s.earlierRings.dropped;
            // The last second only (the first keyframe does not stay in it); capture→encoded when encoding, else capture→taken.
            const recent = s.encoded ? s.recentCaptureToEncoded : null;
            $('stage').textContent = s.encoded ? 'capture→encoded' : 'capture→taken';
            const latency = recent && recent.count > 0 ? recent : (s.encoded ? null : s.captureToTaken);
            $('p50').textContent = latency ? (latency.p50_us / 1000).toFixed(2) + ' ms' : 'nothing encoded';
            $('p99').textContent = latency ? (latency.p99_us / 1000).toFixed(2) + ' ms' : '–';
            history.push({ fps: s.fps, p99: latency ? latency.p99_us / 1000 : null });
          } catch (e) {
            if (++failures >= 3) ended('the host does not answer');
            history.push({ fps: null, p99: null });
          }
          if (history.length > span) history.shift();
          draw();
          setTimeout(poll, period * 1000);
        }
        // Frames/s and p99 against time, the legend above the plot, seconds ago along the bottom.
        function draw() {
          const c = $('chart'), g = c.getContext('2d');
          const left = 44, right = 10, top = 22, bottom = 20, w = c.width - left - right, h = c.height - top - bottom;
          g.clearRect(0, 0, c.width, c.height);
          g.font = '11px system-ui, sans-serif';
          const x = i => left + w - (history.length - 1 - i) * w / (span - 1);
          g.strokeStyle = '#333'; g.fillStyle = '#999'; g.textAlign = 'center';
          for (const ago of [0, 15, 30, 45, 60]) {
            const px = left + w - ago / period * w / (span - 1);
            g.beginPath(); g.moveTo(px, top); g.lineTo(px, top + h); g.stroke();
            g.fillText(ago === 0 ? 'now' : '−' + ago + ' s', px, c.height - 6);
          }
          const p99s = history.map(p => p.p99).filter(v => v !== null);
          const series = [['fps', '#6c6', 60, 'frames/s (0–60)'], ['p99', '#fc6', Math.max(10, ...p99s), 'p99 ms (0–' + Math.max(10, ...p99s).toFixed(0) + ')']];
          series.forEach(([key, color, max, title], i) => {
            g.strokeStyle = color; g.beginPath();
            let drawing = false;
            history.forEach((point, index) => {
              if (point[key] === null) { drawing = false; return; }
              const y = top + h - Math.min(1, point[key] / max) * h;
              drawing ? g.lineTo(x(index), y) : g.moveTo(x(index), y);
              drawing = true;
            });
            g.stroke(); g.fillStyle = color; g.textAlign = 'left';
            g.fillText('■ ' + title, left + i * 170, 14);
          });
        }
        poll();
        </script>
        </body></html>
        """
    }
}
