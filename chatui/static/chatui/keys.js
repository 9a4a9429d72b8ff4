/* W8 (docs/rendering.md#w8): the page's keys. j / k move to the next / previous entry of
 * the transcript, e to the next failure, / to search, ? shows the list (#keys-help).
 * Never while typing, nor with Ctrl, Alt or Meta (the browser's and the reader's own
 * shortcuts). An entry is focused (it takes tabindex=-1 for that), so the next Tab
 * continues from there and a screen reader reads it; a collapsed batch holding it is
 * opened first, as a reader would. Scrolling keeps it clear of the sticky bars (html's
 * scroll-padding, chatui.js). */
(function () {
  "use strict";

  var ENTRY = "#transcript [data-role]";
  var FAILURE = '#transcript [data-role=tool][data-status=error], #transcript [data-run-error]';

  function typing(target) {
    // An open entry menu (tool_menu.js) keeps its keys too: letters are no moves there.
    return target.closest && target.closest("input, textarea, select, [contenteditable], dialog, [role=menu]");
  }

  function shown(el) {
    return el.getClientRects().length > 0;
  }

  function openAround(el) {
    for (var up = el.parentElement; up; up = up.parentElement) {
      if (up.tagName === "DETAILS" && !up.open && up.contains(el) && up.querySelector("summary") !== el) {
        up.open = true;
      }
    }
  }

  function focusEntry(el) {
    openAround(el);
    if (!el.hasAttribute("tabindex")) el.setAttribute("tabindex", "-1");
    el.focus({ preventScroll: true });
    el.scrollIntoView({ block: "nearest" });
  }

  /* The entry the reader is at: the focused one, else the first below the top bar. */
  function current(list) {
    var focused = document.activeElement && document.activeElement.closest("[data-role]");
    if (focused && list.indexOf(focused) !== -1) return list.indexOf(focused);
    var top = parseFloat(getComputedStyle(document.documentElement).scrollPaddingTop) || 0;
    for (var i = 0; i < list.length; i++) {
      if (list[i].getBoundingClientRect().bottom > top) return i - 0.5;
    }
    return list.length - 0.5;
  }

  function move(step) {
    var list = Array.prototype.filter.call(document.querySelectorAll(ENTRY), shown);
    if (!list.length) return false;
    var at = current(list);
    var next = step > 0 ? Math.floor(at) + 1 : Math.ceil(at) - 1;
    if (next < 0 || next >= list.length) return true; // at an end: stay
    focusEntry(list[next]);
    return true;
  }

  function nextFailure() {
    var failures = Array.prototype.slice.call(document.querySelectorAll(FAILURE));
    if (!failures.length) return false;
    var focused = document.activeElement;
    // The first failure after the focused element in document order, else the first.
    var after = failures.filter(function (el) {
      return focused && focused !== document.body &&
        (focused.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) &&
        !focused.contains(el);
    });
    focusEntry(after[0] || failures[0]);
    return true;
  }

  function search() {
    var box = document.querySelector("input[name=q]");
    if (box) {
      box.focus();
      box.select();
      return true;
    }
    var home = document.querySelector(".topbar .brand");
    if (!home) return false;
    window.location.assign(home.href + "#search");
    return true;
  }

  function help() {
    var dialog = document.getElementById("keys-help");
    if (!dialog || dialog.open) return false;
    dialog.showModal();
    return true;
  }

  /* W10: ← / → follow the moment bar's previous / next link, as its buttons do. */
  function step(which) {
    var link = document.querySelector('.moment-bar [data-moment-step="' + which + '"]');
    if (!link) return false;
    window.location.assign(link.href);
    return true;
  }

  var ACTIONS = {
    j: function () { return move(1); },
    k: function () { return move(-1); },
    e: nextFailure,
    "/": search,
    "?": help,
    ArrowLeft: function () { return step("previous"); },
    ArrowRight: function () { return step("next"); },
  };
  // The arrows are the browser's own with Shift too (selection): only bare presses.
  var BARE_ONLY = { ArrowLeft: true, ArrowRight: true };

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.altKey || event.metaKey || event.isComposing) return;
    var action = ACTIONS[event.key];
    if (!action || typing(event.target) || (BARE_ONLY[event.key] && event.shiftKey)) return;
    if (action()) event.preventDefault();
  });

  document.addEventListener("DOMContentLoaded", function () {
    if (window.location.hash === "#search") {
      var box = document.querySelector("input[name=q]");
      if (box) box.focus();
    }
  });
})();
