/* The replay player (docs/rendering.md#time-travel). It renders nothing itself: for each step it fetches
 * the transcript as it stood after that event (GET /c/<id>/at/<seq>, the same partials
 * as the live page, re-projected from the log on the server) and swaps it in with
 * htmx, so chatui.js decorates it as it does a live page.
 *
 * Pace: the events' recorded timestamps (#replay-timeline: [{seq, t}], t in ms),
 * every gap capped at 2 s, divided by the speed. One fetch is in flight at a time;
 * when the server is slower than the pace, the player skips to the event due now
 * (as a live page does when frames pile up), and always ends on the last event.
 * Test hooks: #replay[data-shown-seq], [data-playing].
 */
(function () {
  "use strict";

  var MAX_GAP_MS = 2000;
  var bar = document.getElementById("replay");
  var data = document.getElementById("replay-timeline");
  if (!bar || !data) return;

  var timeline = JSON.parse(data.textContent);
  var lastSeq = timeline.length ? timeline[timeline.length - 1].seq : 0;
  var playButton = bar.querySelector("[data-replay-play]");
  var stepButton = bar.querySelector("[data-replay-step]");
  var speedSelect = bar.querySelector("[data-replay-speed]");
  var scrubber = bar.querySelector("[data-replay-scrubber]");
  var momentUrl = bar.getAttribute("data-moment-url").replace(/0$/, "");

  // offsets[seq]: the replay clock (ms, gaps capped) when event seq happens; seq 0 = start.
  var offsets = [0];
  var timeOf = {};
  timeline.forEach(function (event, index) {
    var gap = index ? event.t - timeline[index - 1].t : 0;
    offsets[event.seq] = offsets[event.seq - 1] + Math.min(Math.max(gap, 0), MAX_GAP_MS);
    timeOf[event.seq] = event.t;
  });

  // The replay's length at 1× (shown, and a hook for tests of the 2 s cap).
  var length = offsets[lastSeq] || 0;
  bar.setAttribute("data-replay-ms", String(length));
  var lengthNote = bar.querySelector("[data-replay-length]");
  // W10: the length the reader will sit through, at the speed chosen.
  function showLength() {
    if (!lengthNote) return;
    var seconds = Math.round(length / speed() / 1000);
    lengthNote.textContent =
      Math.floor(seconds / 60) + ":" + String(seconds % 60).padStart(2, "0") + " at " + speed() + "×";
  }

  var shown = parseInt(bar.getAttribute("data-shown-seq") || "0", 10);
  var wanted = shown; // the seq the reader or the clock asks for
  var loading = false;
  var playing = false;
  var timer = null;
  var clockBase = 0; // the replay clock when play started ...
  var wallBase = 0; // ... and the wall clock then

  function speed() {
    return parseInt(speedSelect.value, 10) || 1;
  }

  function clock() {
    return clockBase + (performance.now() - wallBase) * speed();
  }

  /* The last seq whose time has come on the replay clock. */
  function dueSeq() {
    var now = clock();
    var seq = shown;
    while (seq < lastSeq && offsets[seq + 1] <= now) seq += 1;
    return seq;
  }

  function show(seq) {
    wanted = Math.max(0, Math.min(seq, lastSeq));
    scrubber.value = String(wanted);
    if (!loading) load();
  }

  function load() {
    if (wanted === shown) return schedule();
    var seq = wanted;
    loading = true;
    setClock(seq); // before the swap, so chatui.js dates the new frame from its moment
    htmx
      .ajax("GET", momentUrl + seq, { target: "#transcript", swap: "outerHTML" })
      .finally(function () {
        loading = false;
        // What is on screen is what the swapped-in transcript says it is.
        var list = document.getElementById("transcript");
        var actual = parseInt(list.getAttribute("data-last-seq"), 10);
        if (actual !== seq && wanted === seq) wanted = actual; // the fetch failed: stay put
        shown = actual;
        bar.setAttribute("data-shown-seq", String(actual));
        scrubber.value = String(wanted);
        setClock(actual);
        if (wanted !== shown) load();
        else schedule();
      });
  }

  /* The page's clock (chatui.js: #live[data-as-of]) stands at event seq's time. */
  function setClock(seq) {
    var live = document.getElementById("live");
    var when = timeOf[seq] ? new Date(timeOf[seq]).toISOString() : "";
    if (live) live.setAttribute("data-as-of", when);
  }

  /* While playing: wait until the next event is due, then show what is due. */
  function schedule() {
    clearTimeout(timer);
    if (!playing || loading) return;
    if (shown >= lastSeq) return setPlaying(false);
    var wait = (offsets[shown + 1] - clock()) / speed();
    timer = setTimeout(function () {
      if (playing) show(Math.max(dueSeq(), shown + 1));
    }, Math.max(wait, 0));
  }

  function restartClock() {
    clockBase = offsets[wanted] || 0;
    wallBase = performance.now();
  }

  function setPlaying(on) {
    playing = on;
    clearTimeout(timer);
    // W7: both labels (with their SVG icons) are in the button; one shows.
    playButton.querySelector("[data-replay-paused]").hidden = on;
    playButton.querySelector("[data-replay-playing]").hidden = !on;
    playButton.setAttribute("aria-pressed", on ? "true" : "false");
    if (on) bar.setAttribute("data-playing", "");
    else bar.removeAttribute("data-playing");
    if (on) {
      restartClock();
      schedule();
    }
  }

  playButton.addEventListener("click", function () {
    if (playing) return setPlaying(false);
    if (wanted >= lastSeq) show(0); // played to the end: from the beginning again
    setPlaying(true);
  });

  stepButton.addEventListener("click", function () {
    setPlaying(false);
    show(wanted + 1);
  });

  speedSelect.addEventListener("change", function () {
    showLength();
    if (playing) restartClock();
  });

  showLength();

  scrubber.addEventListener("input", function () {
    show(parseInt(scrubber.value, 10));
    if (playing) restartClock();
  });
})();
