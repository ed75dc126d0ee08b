// The subscriber's LayerRule (Sources/FrameRelaySubscriber/Media/LayerRule.swift)
// in JavaScript, line for line (times in ms): which simulcast substream and
// temporal layer a viewer watches, from the frames it receives whole, the
// frames it misses and the packets lost after repair. LayerRuleTests runs it
// (node) on the sequences the Swift type is tested on. The viewer page includes it.
class LayerRule {
  constructor(layers, bitrates, now) {
    this.ladder = [];
    for (let s = 0; s < layers; s++) { this.ladder.push({ substream: s, temporal: 0 }); this.ladder.push({ substream: s, temporal: 1 }); }
    this.rungBitrates = bitrates && bitrates.length === layers ? bitrates.flatMap(r => [r * LayerRule.baseShare, r]) : null;
    this.sizes = [];
    this.rung = 1; this.hold = LayerRule.firstHold; this.lastSwitch = now; this.lastUp = -Infinity; this.lastTrouble = now;
    this.nextEvaluation = now + LayerRule.evaluateEvery; this.lastExpected = 0; this.lastLost = 0; this.missing = 0;
    this.rtpTime = 0; this.lastTimestamp = null; this.floors = []; this.delaySum = 0; this.delayCount = 0; this.lastFrame = now;
    this.windowBytes = 0; this.windowStart = now;
  }
  get layer() { return this.ladder[this.rung]; }
  // A frame of `bytes` received whole at `now` with RTP timestamp `timestamp` (`keyframe`: a keyframe, not in the capacity).
  frame(now, timestamp, bytes, keyframe = false) {
    if (this.lastTimestamp !== null) this.rtpTime += ((timestamp - this.lastTimestamp) | 0) / 90;
    this.lastTimestamp = timestamp;
    const delay = now - this.rtpTime, second = Math.floor(now / 1000);
    const last = this.floors.length ? this.floors[this.floors.length - 1] : null;
    if (last !== null && last.second === second) {
      last.delay = Math.min(last.delay, delay);
    } else {
      this.floors.push({ second: second, delay: delay });
      this.floors = this.floors.filter(f => f.second > second - LayerRule.floorSeconds);
    }
    const floor = Math.min(...this.floors.map(f => f.delay));
    this.delaySum += delay - floor;
    this.delayCount++;
    // The link's time on this frame alone: from when it could start on it (sent, at the least delay, or the frame before through).
    const busy = now - Math.max(this.lastFrame, this.rtpTime + floor);
    this.lastFrame = now;
    if (!keyframe) {
      this.sizes.push({ bytes: bytes, busy: busy });
      if (this.sizes.length > LayerRule.capacityFrames) this.sizes.shift();
    }
    this.windowBytes += bytes;
  }
  // The link's capacity (kbit/s) from the slope of the last frames' time on the link against their size; null when unknown.
  get capacity() {
    if (this.sizes.length < LayerRule.capacityMinimum) return null;
    const n = this.sizes.length;
    const meanBytes = this.sizes.reduce((a, s) => a + s.bytes, 0) / n, meanBusy = this.sizes.reduce((a, s) => a + s.busy, 0) / n;
    const spread = this.sizes.reduce((a, s) => a + (s.bytes - meanBytes) * (s.bytes - meanBytes), 0);
    if (spread / n < LayerRule.sizeSpread * LayerRule.sizeSpread) return null;
    const slope = this.sizes.reduce((a, s) => a + (s.bytes - meanBytes) * (s.busy - meanBusy), 0) / spread;
    return slope > 0 ? 8 / slope : Infinity;
  }
  // Frames missed: lost for good, or not shown for want of a keyframe.
  missed(frames) { this.missing += frames; }
  // At `now`, with the packets expected and lost after repair so far: the rung to move to, when it changes.
  tick(now, expected, lost) {
    if (now < this.nextEvaluation) return null;
    this.nextEvaluation = now + LayerRule.evaluateEvery;
    const expectedNow = Math.max(0, expected - this.lastExpected), lostNow = Math.max(0, lost - this.lastLost);
    this.lastExpected = expected; this.lastLost = lost;
    const loss = expectedNow > 0 ? lostNow / expectedNow : 0;
    const delay = this.delayCount > 0 ? this.delaySum / this.delayCount : 0;
    const trouble = loss > LayerRule.lossLimit || delay > LayerRule.delayLimit || this.missing > 0 || now - this.lastFrame > LayerRule.silenceLimit;
    const received = this.windowBytes * 8 / Math.max(1, now - this.windowStart);  // kbit/s
    this.delaySum = 0; this.delayCount = 0; this.missing = 0; this.windowBytes = 0; this.windowStart = now;
    if (trouble) {
      this.lastTrouble = now;
      if (this.rung === 0 || (this.lastSwitch !== this.lastUp && now - this.lastSwitch < LayerRule.switchGap)) return null;
      if (this.lastSwitch === this.lastUp && now - this.lastUp < LayerRule.recentUp) {
        this.hold = Math.min(LayerRule.longestHold, this.hold * 2);
      } else if (now - this.lastUp >= LayerRule.recentUp) {
        this.hold = LayerRule.firstHold;
      }
      this.rung--;
      if (this.rungBitrates) { while (this.rung > 0 && this.rungBitrates[this.rung] * LayerRule.headroom > received) this.rung--; }
      this.lastSwitch = now;
      return this.layer;
    }
    if (this.rung >= this.ladder.length - 1 || now - this.lastTrouble < this.hold || now - this.lastSwitch < this.hold) return null;
    const capacity = this.capacity, rates = this.rungBitrates;
    if (rates && capacity !== null) {
      // The highest rung up to the next substream at its full rate that the link has room for.
      const reach = Math.min(this.ladder.length - 1, (this.ladder[this.rung].substream + 1) * 2 + 1);
      let target = null;
      for (let r = this.rung + 1; r <= reach; r++) if (capacity >= rates[r] * LayerRule.headroom) target = r;
      if (target === null) return null;
      this.rung = target;
    } else {
      this.rung++;
    }
    this.lastSwitch = now;
    this.lastUp = now;
    return this.layer;
  }
}
LayerRule.evaluateEvery = 500; LayerRule.lossLimit = 0.02; LayerRule.delayLimit = 150; LayerRule.floorSeconds = 10;
LayerRule.silenceLimit = 2000; LayerRule.switchGap = 2000; LayerRule.firstHold = 5000; LayerRule.longestHold = 40000; LayerRule.recentUp = 10000;
LayerRule.capacityFrames = 60; LayerRule.capacityMinimum = 30; LayerRule.sizeSpread = 300; LayerRule.headroom = 1.2; LayerRule.baseShare = 0.6;

// What a mountpoint's description names, as the subscriber reads it (JanusMountpoint.layers(inDescription:)),
// with the same expression: "NAME layers=N kbps=A,B"; anything else is one layer. The bitrates, one for each
// layer, each 1 to 100,000 kbit/s and rising, or null.
function layersInDescription(description) {
  // A control character or line separator anywhere: one layer (the two languages' `.` part over U+0085).
  if (/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(description)) return { layers: 1, bitrates: null };
  const described = description.match(/^(.*) layers=([1-3])(?: kbps=([0-9]+(?:,[0-9]+)*))?$/);
  const layers = described ? Number(described[2]) : 1;
  const rates = described && described[3] ? described[3].split(',').map(Number) : [];
  const bitrates = rates.length === layers && rates.every((r, i) => r >= 1 && r <= 100000 && (i === 0 || r > rates[i - 1])) ? rates : null;
  return { layers, bitrates };
}
