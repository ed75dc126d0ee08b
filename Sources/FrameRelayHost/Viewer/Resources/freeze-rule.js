// The subscriber's FreezeDetector (Sources/FrameRelaySubscriber/Media/FreezeDetector.swift)
// in JavaScript, line for line (times in ms): a freeze is a wait between two
// frames shown longer than the host's gap from the first to the next frame it
// sent that the viewer received whole (their RTP timestamps) by
// max(2 × the host's usual gap, 150 ms). FreezeRuleTests runs it (node) on the
// sequences the Swift type is tested on. The viewer page includes it.
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
