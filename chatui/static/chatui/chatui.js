/* chatui's own behaviour: live-frame bookkeeping, resume, autoscroll, copy buttons,
 * the composer's keys, relative times and pending timers. No inline script anywhere
 * (SEC3); htmx and its ws extension do the swapping, except a frame of streamed text
 * only, which is appended here (streamedTextParts).
 *
 * Every live frame starts with a marker comment <!--seq FIRST LAST-->. The page
 * keeps the last seq it has applied in #transcript[data-last-seq]:
 *   LAST <= applied            → a frame we already have (replay overlap): dropped;
 *   FIRST > applied + 1         → we missed something: fetch the transcript afresh;
 *   otherwise                   → swapped by htmx, then applied = LAST.
 * The socket is opened with ?after=<applied> so a reconnect replays what was missed.
 *
 * A page opened at a search hit (/c/<id>/?m=<pk>#m-<pk>) may show a window of older
 * messages (#live[data-around]): frames still update what it shows, but nothing is
 * appended after it (that would hide the gap), and a whole-transcript frame fetches
 * the same window afresh instead of jumping to the latest.
 */
(function () {
  "use strict";

  var MARKER = /^\s*<!--seq (\d+) (\d+)-->/;
  var refreshing = false;

  function transcript() {
    return document.getElementById("transcript");
  }

  /* The position the window is around, when the page shows an older window. */
  function around() {
    var live = document.getElementById("live");
    return live ? live.getAttribute("data-around") : null;
  }

  function isWholeTranscript(text) {
    return /<section id="transcript"/.test(text || "");
  }

  function appliedSeq() {
    var el = transcript();
    return el ? parseInt(el.getAttribute("data-last-seq") || "0", 10) : 0;
  }

  function setAppliedSeq(seq) {
    var el = transcript();
    if (el && seq > appliedSeq()) el.setAttribute("data-last-seq", String(seq));
  }

  /* --- resume: every (re)connect asks for what happened after our last seq --- */
  htmx.createWebSocket = function (url) {
    var u = new URL(url, window.location.href);
    u.searchParams.set("after", String(appliedSeq()));
    var socket = new WebSocket(u.toString(), []);
    socket.binaryType = htmx.config.wsBinaryType;
    return socket;
  };

  function refreshTranscript() {
    var el = transcript();
    if (!el || refreshing) return;
    refreshing = true;
    var url = el.getAttribute("data-refresh-url");
    if (around()) url += "?around=" + encodeURIComponent(around());
    htmx
      .ajax("GET", url, { target: "#transcript", swap: "outerHTML" })
      .finally(function () {
        refreshing = false;
        afterChange();
      });
  }

  /* Decide whether a frame (from the socket or from the composer's POST) applies. */
  function admitFrame(text) {
    var match = MARKER.exec(text || "");
    if (!match) return true;
    var first = parseInt(match[1], 10);
    var last = parseInt(match[2], 10);
    var applied = appliedSeq();
    if (last <= applied) return false;
    if (refreshing) return false;
    if (first > applied + 1) {
      refreshTranscript();
      return false;
    }
    return true;
  }

  function frameLastSeq(text) {
    var match = MARKER.exec(text || "");
    return match ? parseInt(match[2], 10) : 0;
  }

  var stickToBottom = true;

  /* The list and the rail have their own socket (/ws/rows/): its row frames carry no
   * seq and are no transcript activity (no autoscroll, no "new activity"). */
  function isRowsSocket(event) {
    var el = event.target;
    return !!(el && el.matches && el.matches("[data-conversation-rows]"));
  }

  // Exposed for end-to-end tests and themes: is the live socket open right now?
  // (__chatuiSocketOpen: the transcript's; __chatuiRowsSocketOpen: the list's or rail's.)
  document.addEventListener("htmx:wsOpen", function (event) {
    if (isRowsSocket(event)) window.__chatuiRowsSocketOpen = true;
    else window.__chatuiSocketOpen = true;
  });
  document.addEventListener("htmx:wsClose", function (event) {
    if (isRowsSocket(event)) window.__chatuiRowsSocketOpen = false;
    else window.__chatuiSocketOpen = false;
  });

  document.addEventListener("htmx:wsBeforeMessage", function (event) {
    if (isRowsSocket(event)) return;
    // While a scroll is pending the layout is dirty with the text appended since the
    // last frame: measuring again would force a layout per message, and see the
    // reader as scrolled away by what was just appended.
    if (!scrollPending) stickToBottom = atBottom();
    var text = event.detail.message;
    var parts;
    if (!admitFrame(text)) {
      event.preventDefault();
    } else if (around() && isWholeTranscript(text)) {
      event.preventDefault();
      refreshTranscript();
    } else if ((parts = streamedTextParts(text))) {
      event.preventDefault(); // applied here, not by htmx (see streamedTextParts)
      appendStreamedText(parts);
      setAppliedSeq(frameLastSeq(text));
      settleViewSoon();
    } else {
      captureAnchor(); // W1: htmx swaps it; afterChange keeps the view (not for text only)
    }
  });

  document.addEventListener("htmx:wsAfterMessage", function (event) {
    if (isRowsSocket(event)) return;
    setAppliedSeq(frameLastSeq(event.detail.message));
    afterChange();
  });

  // The composer's POST answers with a frame too (L4: the message appears at once);
  // whichever of it and the socket's copy comes second is dropped by its seq.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    if (!xhr || !MARKER.test(xhr.responseText || "")) return;
    stickToBottom = atBottom();
    if (!admitFrame(xhr.responseText)) {
      event.detail.shouldSwap = false;
      return;
    }
    if (around() && isWholeTranscript(xhr.responseText)) {
      event.detail.shouldSwap = false;
      refreshTranscript();
    }
  });

  document.addEventListener("htmx:afterSwap", function (event) {
    var xhr = event.detail.xhr;
    if (xhr) setAppliedSeq(frameLastSeq(xhr.responseText));
  });

  document.addEventListener("htmx:afterSettle", afterChange);

  /* Concurrent writers can make a frame append what a newer render already shows,
   * or replace what has not arrived yet. Appends of an existing id replace it;
   * replaces of a missing id append. The same holds for entries appended to a
   * batch's list (#b-N-entries, #m-N-children). */
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var detail = event.detail;
    if (isDelta(detail)) return admitDelta(detail);
    var isList = detail.target === transcript() || detail.target.hasAttribute("data-tool-entries");
    if (!isList || !detail.fragment) return;
    var fresh = detail.fragment.firstElementChild;
    var existing = fresh && fresh.id && document.getElementById(fresh.id);
    if (existing) {
      existing.replaceWith(fresh);
      detail.shouldSwap = false;
    } else if (around() && detail.target === transcript()) {
      detail.shouldSwap = false; // new, so after the window's gap: "show latest" has it
    }
  });

  /* A delta part (chatui.live.frames.delta_part) appends streamed text to a bubble. The
   * bubble's message carries the seq it reflects: a bubble rendered after that delta
   * was applied already has its text, so the delta is skipped, never doubled.
   *
   * A frame of nothing but delta parts (a streamed answer's, joined per tick by
   * chatui.live.consumers) is applied here rather than by htmx's generic out-of-band swap,
   * and without afterChange's walks over the transcript (nothing but text changed):
   * each bubble's text node gets the frame's new text at once, and the page follows it
   * at the next animation frame. Per message, htmx's swaps plus afterChange's forced
   * layout of the growing bubble cost the page ~10 ms, and a page that applies a
   * message every 25 ms fell tens of ms behind (bench/p5, docs/PERFORMANCE.md#p5). Frames with
   * anything else in them go to htmx, whose swaps use admitDelta below. */
  var STREAM_TARGET = /^beforeend:#(m-\d+) \[data-stream-text\]$/;

  function streamedTextParts(text) {
    if (text.indexOf("data-delta-seq") < 0) return null;
    var template = document.createElement("template");
    template.innerHTML = text; // inert: nothing runs or loads, only text is taken
    var children = template.content.children;
    var parts = [];
    for (var i = 0; i < children.length; i++) {
      var part = children[i];
      var target = STREAM_TARGET.exec(part.getAttribute("hx-swap-oob") || "");
      var seq = parseInt(part.getAttribute("data-delta-seq"), 10);
      if (!target || isNaN(seq) || part.childElementCount) return null;
      parts.push({ id: target[1], seq: seq, text: part.textContent });
    }
    return parts.length ? parts : null;
  }

  function appendStreamedText(parts) {
    var bubbles = new Map(); // message dom id → its bubble, seq and new text
    parts.forEach(function (part) {
      var entry = bubbles.get(part.id);
      if (!entry) {
        var message = document.getElementById(part.id);
        var bubble = message && message.querySelector("[data-stream-text]");
        var owner = bubble && bubble.closest("[data-seq]");
        var seq = owner ? parseInt(owner.getAttribute("data-seq") || "0", 10) : 0;
        entry = { bubble: bubble, owner: owner, seq: seq, text: "", appended: false };
        bubbles.set(part.id, entry);
      }
      // No bubble: a message this page does not show streaming (as htmx: ignored).
      if (!entry.owner || part.seq <= entry.seq) return;
      entry.seq = part.seq;
      entry.text += part.text;
      entry.appended = true;
    });
    bubbles.forEach(function (entry) {
      if (!entry.appended) return;
      // Into the bubble's text node, as a fresh load has it: laying out 18,000
      // characters in one node took Chromium 1.1–1.8 ms, in 500 nodes 3.0 ms.
      var last = entry.bubble.lastChild;
      if (last && last.nodeType === Node.TEXT_NODE) last.appendData(entry.text);
      else entry.bubble.appendChild(document.createTextNode(entry.text));
      entry.owner.setAttribute("data-seq", String(entry.seq));
    });
  }

  function isDelta(detail) {
    var part = detail.fragment;
    return !!(part && part.getAttribute && part.hasAttribute("data-delta-seq"));
  }

  function admitDelta(detail) {
    var seq = parseInt(detail.fragment.getAttribute("data-delta-seq"), 10);
    var message = detail.target.closest("[data-seq]");
    if (!message) return;
    if (seq <= parseInt(message.getAttribute("data-seq") || "0", 10)) {
      detail.shouldSwap = false;
    } else {
      message.setAttribute("data-seq", String(seq));
    }
  }

  /* --- parts whose target this page lacks ---
   * chatui sends some out-of-band parts whose target a page may not have, on purpose:
   * the delete of a message this page never showed (a step hidden once its tool calls
   * came), a transcript item new to this page, the entries of a batch it does not show,
   * a conversation's row new to this list. htmx would log each as a console error
   * (htmx:oobErrorNoTarget) before any handler could step in, so they are taken out
   * of the frame here, before htmx swaps it — the socket's frames and the composer's
   * answer alike (the "chatui" extension, on <body>) — and handled as each needs:
   *   a delete, or text for a bubble not shown → dropped (nothing to change);
   *   a transcript item                        → appended to the transcript (the
   *       oobBeforeSwap handler above keeps a window around a search hit unchanged);
   *   a batch's entry or summary               → the page is behind (or shows an
   *       older window): it fetches the transcript afresh;
   *   a conversation row                        → placed at the top of the list.
   * A part of any other kind without its target is left to htmx, whose error shows. */
  var ITEM_ID = /^[mb]-\d+$/;
  var BATCH_LIST = /^#b-\d+-entries$|^#m-\d+-children$/;
  var BUBBLE = /^#m-\d+ \[data-stream-text\]$/;

  function oobTarget(part, socket) {
    // As htmx reads hx-swap-oob: "true" (or none, on a socket) swaps the element of
    // the part's id; "style:selector" swaps into selector; "style" alone, the id.
    var spec = part.getAttribute("hx-swap-oob");
    if (spec === null && !socket) return null; // not out of band: htmx leaves it alone
    spec = spec || "true";
    var colon = spec.indexOf(":");
    if (colon < 0 && !part.id) return null; // no target to look for: htmx's to judge
    return {
      style: spec === "true" ? "outerHTML" : colon < 0 ? spec : spec.slice(0, colon),
      selector: colon < 0 ? "#" + part.id : spec.slice(colon + 1),
    };
  }

  function placeUntargeted(part, target) {
    if (target.style === "delete" || BUBBLE.test(target.selector)) return "drop";
    if (isRow(part)) {
      placeRow(part);
      return "drop";
    }
    if (!transcript()) return "keep";
    if (/^(LI|SUMMARY)$/.test(part.tagName) || BATCH_LIST.test(target.selector)) {
      if (!around()) refreshTranscript();
      return "drop";
    }
    if (target.style === "outerHTML" && ITEM_ID.test(part.id) && part.childElementCount) {
      return "append";
    }
    return "keep";
  }

  function targetFound(selector, earlier) {
    if (document.querySelector(selector)) return true;
    // An earlier part of the same message may bring it: frames are joined per tick
    // (chatui.live.consumers), so one may add a bubble and the next append text to it.
    return earlier.some(function (part) {
      return part.matches(selector) || part.querySelector(selector) !== null;
    });
  }

  function withoutUntargeted(text, socket) {
    // A whole transcript's parts (transcript, load-earlier, run state, title) are all
    // on a conversation page: a 1 MB frame is not parsed a second time for nothing.
    if (!text || (isWholeTranscript(text) && transcript())) return text;
    var template = document.createElement("template");
    template.innerHTML = text; // inert: nothing runs or loads while it is looked at
    var changed = false;
    var earlier = [];
    Array.prototype.slice.call(template.content.children).forEach(function (part) {
      var target = oobTarget(part, socket);
      var action = !target || targetFound(target.selector, earlier) ? "keep" : null;
      action = action || placeUntargeted(part, target);
      if (action === "keep") {
        earlier.push(part);
        return;
      }
      changed = true;
      if (action === "drop") {
        // (A placed row has left the frame for the list already.)
        if (part.parentNode === template.content) part.remove();
        return;
      }
      var wrapper = document.createElement("div");
      wrapper.setAttribute("hx-swap-oob", "beforeend:#transcript");
      part.removeAttribute("hx-swap-oob");
      part.replaceWith(wrapper);
      wrapper.appendChild(part);
      earlier.push(wrapper);
    });
    return changed ? template.innerHTML : text;
  }

  htmx.defineExtension("chatui", {
    transformResponse: function (text, xhr) {
      return withoutUntargeted(text, !xhr);
    },
  });

  /* Reconnecting. The ws extension reconnects on close codes 1006/1011/1012/1013 after
   * htmx's "full-jitter" delay: random up to 2^retries seconds, doubling to 64 s, reset
   * when a socket opens. After a web process dies its viewers reconnect as a herd; a
   * handshake that lost the race (the other process busy, daphne's 5 s handshake limit)
   * left its page waiting up to a minute for the next try, far past the goal of "current
   * within 5 s". Same jitter, so the herd still spreads out, but capped at 4 s: every
   * page tries again at least every 4 s. A refused handshake costs the server almost
   * nothing (a late one does no database work), so the cap does not feed the herd. */
  var RECONNECT_CAP_MS = 4000;
  htmx.config.wsReconnectDelay = function (retryCount) {
    return Math.min(RECONNECT_CAP_MS, 1000 * Math.pow(2, retryCount)) * Math.random();
  };

  /* --- the reader's open/closed choices survive live updates ---
   * A live frame swaps a batch's summary and changed entries only; a whole-transcript
   * frame (run's end, resume) re-renders batches with the server's state (open while
   * an entry runs or when one failed, else collapsed). What the reader opened or
   * closed by hand is remembered by element id and put back after every swap; a
   * batch the reader never touched follows the server's state (docs/rendering.md#autoscroll). */
  var readerChoice = {};

  function choiceKey(details) {
    if (details.matches("[data-tool-batch]")) return details.id;
    var owner = details.closest("[id]");
    return owner ? owner.id + " " + details.className : null;
  }

  document.addEventListener("click", function (event) {
    var summary = event.target.closest && event.target.closest("#transcript details > summary");
    if (!summary) return;
    var details = summary.parentNode;
    setTimeout(function () {
      var key = choiceKey(details);
      if (key) readerChoice[key] = details.open;
    }, 0);
  });

  function restoreChoices() {
    var list = transcript();
    if (!list) return;
    list.querySelectorAll("details").forEach(function (details) {
      var key = choiceKey(details);
      if (key && key in readerChoice && details.open !== readerChoice[key]) {
        details.open = readerChoice[key];
      }
    });
  }

  /* A swapped summary carries its batch's state; copy it onto the <details>.
   * W1 calm (docs/rendering.md#w1): a batch held open because its going run is in it
   * (data-batch-held) stays open between its tools; once the run moves past it — shown
   * text, a user message or a later batch follows it — it closes, as a fresh load
   * renders it. (That later item's frame does not re-send the batch: the page sees it.) */
  function passed(details) {
    for (var el = details.nextElementSibling; el; el = el.nextElementSibling) {
      if (el.matches("article[data-role], details[data-tool-batch]")) return true;
    }
    return false;
  }

  function syncBatches() {
    var list = transcript();
    if (!list) return;
    list.querySelectorAll("summary[data-batch-summary]").forEach(function (summary) {
      var details = summary.parentElement;
      if (!details || !details.hasAttribute("data-tool-batch")) return;
      details.setAttribute("data-count", summary.getAttribute("data-batch-count"));
      details.setAttribute("data-seq", summary.getAttribute("data-batch-seq"));
      details.toggleAttribute("data-has-error", summary.getAttribute("data-batch-error") === "true");
      var open = summary.getAttribute("data-batch-open") === "true";
      var held = summary.getAttribute("data-batch-held") === "true";
      if (open && held && passed(details)) {
        // Open only because the run was here: it moved on. The summary says so too, so a
        // later swap of another part does not open it again.
        open = false;
        summary.setAttribute("data-batch-open", "false");
        summary.setAttribute("data-batch-held", "false");
      }
      if (!(details.id in readerChoice) && details.open !== open) details.open = open;
    });
  }

  /* --- screen readers hear each finished message or tool result once --- */
  var announced = {};

  function finishedItems() {
    var list = transcript();
    if (!list) return [];
    return Array.from(list.querySelectorAll(
      "article[data-role=assistant]:not([data-streaming]), " +
      "li[data-role=tool][data-status=success], li[data-role=tool][data-status=error]"
    ));
  }

  function announceFinished(silently) {
    var region = document.getElementById("announcer");
    var lines = [];
    finishedItems().forEach(function (el) {
      var key = el.id + " " + el.getAttribute("data-status");
      if (announced[key]) return;
      announced[key] = true;
      if (silently) return;
      if (el.tagName === "ARTICLE") {
        lines.push("Assistant: " + el.textContent.trim().slice(0, 300));
      } else {
        var title = el.querySelector("[data-tool-title]");
        var state = el.getAttribute("data-status") === "error" ? "failed" : "finished";
        lines.push((title ? title.textContent : "Tool") + " " + state);
      }
    });
    if (region && lines.length) region.textContent = lines.join(". ");
  }

  /* --- autoscroll only while the reader is at the bottom --- */
  function scroller() {
    return document.scrollingElement || document.documentElement;
  }

  function atBottom() {
    var s = scroller();
    return s.scrollHeight - s.scrollTop - s.clientHeight < 80;
  }

  /* W2: the tab's title starts with "✋" while an approval waits, else "●" while a run
   * goes (the run strip's data-title-mark, docs/rendering.md#w2). */
  var TITLE_MARK = /^(\u270B|\u25CF) /;
  var MARKS = { approval: "\u270B", running: "\u25CF" }; // ✋ and ●

  function syncTitleMark() {
    var strip = document.getElementById("run-strip");
    if (!strip) return;
    var name = strip.hasAttribute("hidden") ? "" : strip.getAttribute("data-title-mark");
    var mark = MARKS[name] || "";
    var title = document.title.replace(TITLE_MARK, "");
    var wanted = mark ? mark + " " + title : title;
    if (document.title !== wanted) document.title = wanted;
  }

  function afterChange() {
    syncTitleMark();
    syncBatches();
    restoreChoices();
    announceFinished(false);
    decorate(document);
    settleViewSoon();
  }

  /* --- W1: what the reader looks at does not move (docs/rendering.md#w1) ---
   * A reader who is not at the bottom keeps their view: before a frame is applied the
   * first item at the top of the view (a message, a batch's entry) and its place are
   * noted; after it, the page scrolls by however far that item moved (a batch above
   * that grew, closed or opened). Browsers with CSS scroll anchoring have usually done
   * it already: then it moved by nothing. Found by halving the transcript's items, and
   * a batch's entries, so a long transcript costs a few measurements, not one each. */
  var anchor = null;

  function viewTop() {
    var header = document.querySelector("header.topbar");
    var bottom = header ? header.getBoundingClientRect().bottom : 0;
    return Math.max(bottom, 0);
  }

  function firstBelow(items, top) {
    var low = 0;
    var high = items.length - 1;
    var found = null;
    while (low <= high) {
      var middle = (low + high) >> 1;
      if (items[middle].getBoundingClientRect().bottom > top) {
        found = items[middle];
        high = middle - 1;
      } else {
        low = middle + 1;
      }
    }
    return found;
  }

  function captureAnchor() {
    // Frames applied before the view settles share the first one's anchor: it is where
    // the reader's view was before any of them moved it (and measuring now would force
    // the layout the animation frame makes anyway).
    if (scrollPending && anchor) return;
    anchor = null;
    var list = transcript();
    if (stickToBottom || !list) return;
    var top = viewTop();
    var item = firstBelow(list.children, top);
    if (item && item.matches("details[data-tool-batch][open]")) {
      var entries = item.querySelectorAll(":scope > [data-tool-entries] > li[id]");
      var entry = firstBelow(entries, top);
      if (entry && entry.getBoundingClientRect().top > item.getBoundingClientRect().top) item = entry;
    }
    if (item && item.id) anchor = { id: item.id, top: item.getBoundingClientRect().top };
  }

  function keepAnchor() {
    var kept = anchor;
    anchor = null;
    if (!kept || stickToBottom) return;
    var item = document.getElementById(kept.id);
    if (!item) return;
    var moved = item.getBoundingClientRect().top - kept.top;
    if (Math.abs(moved) >= 1) scroller().scrollTop += moved;
  }

  function followOutput() {
    // Only a transcript follows new output: the list page (live rows) stays where
    // the reader is (issue 15: it used to jump to the bottom on load).
    if (!transcript()) return;
    var button = document.getElementById("new-activity");
    if (stickToBottom) {
      scroller().scrollTop = scroller().scrollHeight;
      if (button) button.hidden = true;
    } else if (button) {
      button.hidden = false;
    }
  }

  /* The view is kept (W1) and new output followed once per animation frame, before it
   * paints: the layout that reading positions and scrollHeight needs is then the one the
   * frame makes anyway, not one forced inside each message's handler. Forced there, it
   * was a third of the page's work per tool frame and held the card's swap back ~3 ms
   * (bench/p1_card_latency.py --page-profile, docs/PERFORMANCE.md#p1). */
  var scrollPending = false;

  function settleViewSoon() {
    if (scrollPending) return;
    scrollPending = true;
    requestAnimationFrame(function () {
      scrollPending = false;
      keepSpinnersTurning();
      keepAnchor();
      followOutput();
    });
  }

  /* Spinners keep turning across live frames (docs/rendering.md#w2). A frame replaces the
   * run strip, and a running entry, whole; a new element's CSS animation starts again at
   * 0°, so with a tool event every 100 ms the strip's spinner hardly moved. Each turning
   * animation is pinned to the start of the document's timeline: a replacement carries on
   * from where the element it replaced was. Here, in the animation frame, because reading
   * an element's animations needs the style the frame computes anyway. */
  var TURNING = ".spinner, .icon--loader-circle";

  function keepSpinnersTurning() {
    if (!document.getAnimations) return;
    document.querySelectorAll(TURNING).forEach(function (el) {
      el.getAnimations().forEach(function (animation) {
        if (animation.startTime !== 0) animation.startTime = 0;
      });
    });
  }


  window.addEventListener("scroll", function () {
    var button = document.getElementById("new-activity");
    if (button && atBottom()) button.hidden = true;
  });

  document.addEventListener("click", function (event) {
    var target = event.target.closest("#new-activity");
    if (target) {
      scroller().scrollTop = scroller().scrollHeight;
      target.hidden = true;
    }
    var copy = event.target.closest("button[data-copy], button[data-copy-text]");
    if (copy) copyFrom(copy);
  });

  /* --- copy buttons on code blocks and tool results --- */
  function decorate(root) {
    root.querySelectorAll(".markdown pre:not([data-copy-ready])").forEach(function (pre) {
      pre.setAttribute("data-copy-ready", "");
      var button = document.createElement("button");
      button.type = "button";
      button.className = "copy-button";
      button.setAttribute("data-copy", "");
      button.setAttribute("aria-label", "Copy code");
      button.textContent = "Copy";
      pre.parentNode.insertBefore(button, pre);
    });
    root.querySelectorAll("time[datetime]").forEach(relativeTime);
  }

  function copyFrom(button) {
    var text = button.getAttribute("data-copy-text");
    if (text === null) {
      var source = button.nextElementSibling;
      var selector = button.getAttribute("data-copy");
      if (selector) source = button.closest("[data-copy-scope]").querySelector(selector);
      text = source ? source.textContent : null;
    }
    if (text === null || !navigator.clipboard) return;
    navigator.clipboard.writeText(text).then(function () {
      var label = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1200);
    });
  }

  /* --- relative timestamps (exact time stays in the title) and pending timers --- */
  // A page showing a past moment (time travel, replay: #live[data-as-of]) keeps its
  // clock there: a tool pending then shows how long it had been pending then.
  function now() {
    var live = document.getElementById("live");
    var asOf = live ? Date.parse(live.getAttribute("data-as-of") || "") : NaN;
    return isNaN(asOf) ? Date.now() : asOf;
  }

  function relativeTime(el) {
    var when = Date.parse(el.getAttribute("datetime"));
    if (isNaN(when)) return;
    var seconds = Math.round((now() - when) / 1000);
    if (el.hasAttribute("data-elapsed")) {
      el.textContent = formatElapsed(Math.max(seconds, 0));
      return;
    }
    var text;
    if (seconds < 45) text = "just now";
    else if (seconds < 3600) text = Math.round(seconds / 60) + " min ago";
    else if (seconds < 86400) text = Math.round(seconds / 3600) + " h ago";
    else text = new Date(when).toLocaleDateString();
    el.textContent = text;
  }

  // Same wording as chatui.read.presenters.format_elapsed, so the server's first render and
  // the ticking clock agree.
  function formatElapsed(seconds) {
    if (seconds < 60) return seconds + " s";
    if (seconds < 3600) {
      var rest = seconds % 60;
      return Math.floor(seconds / 60) + " min" + (rest ? " " + rest + " s" : "");
    }
    var minutes = Math.floor((seconds % 3600) / 60);
    return Math.floor(seconds / 3600) + " h" + (minutes ? " " + minutes + " min" : "");
  }

  setInterval(function () {
    document.querySelectorAll("time[data-elapsed]").forEach(relativeTime);
  }, 1000);

  /* --- composer: Enter sends, Shift+Enter breaks the line --- */
  document.addEventListener("keydown", function (event) {
    var area = event.target;
    if (!area.matches || !area.matches("form#composer textarea[name=content]")) return;
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (area.value.trim()) area.form.requestSubmit();
    }
  });

  /* The composer follows the run: disabled while a run that takes no interjections
   * is going (the server refuses such a message anyway, and says why). */
  function syncComposer() {
    var state = document.getElementById("run-state");
    var form = document.getElementById("composer");
    if (!state || !form) return;
    var open = state.getAttribute("data-accepts-input") !== "false";
    form.elements.content.disabled = !open;
    form.querySelector("button[type=submit]").disabled = !open;
    var reason = document.getElementById("composer-busy");
    if (reason) reason.hidden = open;
  }
  document.addEventListener("htmx:afterSettle", syncComposer);
  document.addEventListener("htmx:wsAfterMessage", syncComposer);

  document.addEventListener("htmx:responseError", function (event) {
    var form = event.detail.elt;
    var note = document.getElementById("composer-error");
    if (form && form.id === "composer" && note) {
      note.textContent = event.detail.xhr.responseText || "The message could not be sent.";
      note.hidden = false;
    }
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    var form = event.detail.elt;
    var note = document.getElementById("composer-error");
    if (form && form.id === "composer" && event.detail.successful && note) note.hidden = true;
    if (form && form.id === "composer" && event.detail.successful) {
      form.reset();
      // A fresh idempotency token per message; a double submit reuses the old one.
      form.elements.client_token.value = randomToken();
      form.elements.content.focus();
      // Sent from an older window: the message is after its gap, so go where it shows.
      var latest = around() && document.querySelector("#show-latest a");
      if (latest) window.location.assign(latest.href);
    }
  });

  function randomToken() {
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return Array.from(bytes, function (b) { return b.toString(16).padStart(2, "0"); }).join("");
  }

  /* --- tool approval (docs/rendering.md#approvals): Approve / Deny post #approval-form in the background;
   * the live frame of the decision then removes the buttons in every open page. Without
   * JavaScript the same form posts normally and the page reloads. --- */
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.id !== "approval-form" || !event.submitter || !window.fetch) return;
    event.preventDefault();
    var button = event.submitter;
    var note = document.getElementById("approval-error");
    var body = new FormData(form, button); // before disabling: a disabled button sends nothing
    button.disabled = true;
    fetch(button.formAction, {
      method: "POST",
      body: body,
      headers: { "HX-Request": "true" },
      credentials: "same-origin",
    })
      .then(function (response) {
        if (response.ok) {
          if (note) note.hidden = true;
          return;
        }
        return response.text().then(function (text) {
          if (note) {
            note.textContent = text || "The decision could not be recorded.";
            note.hidden = false;
          }
        });
      })
      .finally(function () { button.disabled = false; });
  });

  /* --- a search hit: /c/<id>/?m=<pk>#m-<pk> opens at that message --- */
  function revealAnchor() {
    var id = window.location.hash.slice(1);
    var target = /^m-\d+$/.test(id) && document.getElementById(id);
    var list = transcript();
    if (!target || !list || !list.contains(target)) return false;
    // An entry of a collapsed batch is shown by opening the batch, as a reader would.
    for (var el = target.parentElement; el && el !== list; el = el.parentElement) {
      if (el.tagName === "DETAILS" && !el.open) {
        el.open = true;
        var key = choiceKey(el);
        if (key) readerChoice[key] = true;
      }
    }
    // W9: the whole entry in view between the sticky bars (html's scroll-padding is
    // their height), its top first when it is taller than that space.
    var room = window.innerHeight - chromeHeight(".topbar") - chromeHeight(".composer-bar");
    target.scrollIntoView({ block: target.offsetHeight <= room ? "center" : "start" });
    markWords(target, new URLSearchParams(window.location.search).get("hl"));
    return true;
  }

  /* --- W9: the sticky bars never cover what is scrolled to or focused --- */
  function chromeHeight(selector) {
    var bar = document.querySelector(selector);
    return bar ? bar.getBoundingClientRect().height : 0;
  }
  function measureChrome() {
    // CSSOM, not a style attribute: allowed by the page's strict CSP.
    var root = document.documentElement.style;
    root.setProperty("--chrome-top", chromeHeight(".topbar") + "px");
    root.setProperty("--chrome-bottom", chromeHeight(".composer-bar") + "px");
  }
  window.addEventListener("resize", measureChrome);
  // The run strip comes and goes inside the composer bar (W2): follow its height.
  if (window.ResizeObserver) {
    var chromeWatch = new ResizeObserver(measureChrome);
    document.addEventListener("DOMContentLoaded", function () {
      [".topbar", ".composer-bar"].forEach(function (selector) {
        var bar = document.querySelector(selector);
        if (bar) chromeWatch.observe(bar);
      });
    });
  }

  /* --- W9: a search hit's matched words marked in its entry. `hl` holds the query's
   * words as search folds them (chatui.read.search), the last one ending in "*" when it
   * matches as a prefix. Text nodes are split; nothing is parsed as HTML. --- */
  var WORD = /(?:[\p{L}\p{N}]|[\u0300-\u036f])+/gu;
  function fold(word) {
    return word.normalize("NFD").replace(/[\u0300-\u036f]/g, "").toLowerCase();
  }
  function markWords(root, hl) {
    var terms = (hl || "").split(/\s+/).filter(Boolean).slice(0, 16);
    if (!terms.length) return;
    var exact = new Set();
    var prefixes = [];
    terms.forEach(function (term) {
      if (term.length > 64) return;
      if (term.endsWith("*")) prefixes.push(fold(term.slice(0, -1)));
      else exact.add(fold(term));
    });
    function matches(word) {
      var folded = fold(word);
      return exact.has(folded) || prefixes.some(function (p) { return p && folded.startsWith(p); });
    }
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: function (node) {
        return node.parentElement.closest("script, style, textarea, mark")
          ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT;
      },
    });
    var nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    nodes.forEach(function (node) {
      var text = node.nodeValue, done = 0, pieces = [], found;
      WORD.lastIndex = 0;
      while ((found = WORD.exec(text))) {
        if (!matches(found[0])) continue;
        pieces.push(document.createTextNode(text.slice(done, found.index)));
        var mark = document.createElement("mark");
        mark.className = "search-mark";
        mark.textContent = found[0];
        pieces.push(mark);
        done = found.index + found[0].length;
      }
      if (!pieces.length) return;
      pieces.push(document.createTextNode(text.slice(done)));
      node.replaceWith.apply(node, pieces);
    });
  }

  // The run strip's jumps (to an approval, the first failure) open what hides the entry.
  window.addEventListener("hashchange", function () {
    if (revealAnchor()) stickToBottom = false;
  });

  document.addEventListener("DOMContentLoaded", function () {
    syncTitleMark();
    announceFinished(true);
    decorate(document);
    measureChrome();
    if (!transcript()) return; // the list and other pages open at the top
    if (revealAnchor()) stickToBottom = false;
    else scroller().scrollTop = scroller().scrollHeight;
  });

  /* --- live conversation rows (list page and rail): a changed row moves to the top,
   * a new one is added there (newest first, as the server orders them) --- */
  function placeRow(fresh) {
    var list = document.querySelector("[data-conversation-rows]");
    if (!list) return;
    var existing = document.getElementById(fresh.id);
    var current = existing && existing.querySelector("a[aria-current]");
    if (current) fresh.querySelector("a").setAttribute("aria-current", "page");
    if (existing) existing.remove();
    list.insertBefore(fresh, list.firstElementChild);
    decorate(fresh);
  }

  function isRow(element) {
    return element && /^row-[0-9a-f-]{36}$/.test(element.id || "");
  }

  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var fresh = event.detail.fragment && event.detail.fragment.firstElementChild;
    if (!isRow(fresh)) return;
    event.detail.shouldSwap = false;
    placeRow(fresh);
  });

})();
