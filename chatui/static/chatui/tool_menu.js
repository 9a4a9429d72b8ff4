/* W8 (docs/rendering.md#w8): a tool entry's Copy output, Copy args and Details sit behind
 * one menu button ([data-tool-menu-button], aria-haspopup="menu"), so an entry costs one
 * Tab stop for its actions. The menu follows the WAI-ARIA menu button pattern:
 *   - the button (click, Enter, Space, ↓) opens it on its first item, ↑ on its last;
 *   - ↓ / ↑ move between items (wrapping), Home / End to the ends;
 *   - Escape closes it and returns focus to the button; Tab closes it and moves on from
 *     the button; a click or focus elsewhere closes it.
 * Copy output and Copy args keep their own behaviour (chatui.js copies what is in the page,
 * tool_text.js fetches a deferred text by data-copy-url) and their feedback ("Copied") on
 * the item itself, so a copy leaves the menu open where the reader sees it, and
 * #announcer says it for screen readers. Details opens the entry's Details disclosure (a
 * closed one is not shown, chatui.css) and moves focus to its summary; closing it there
 * returns focus to the button. Everything is delegated from the document: live frames
 * swap entries in and out, and the server's markup is never changed on load. */
(function () {
  "use strict";

  var BUTTON = "[data-tool-menu-button]";
  var ITEM = "[role=menuitem]";
  var FEEDBACK = { Copied: " copied", "Copy failed": " not copied" };

  var current = null; // { button, menu } of the open menu

  function menuOf(button) {
    return document.getElementById(button.getAttribute("aria-controls"));
  }

  function itemsOf(menu) {
    return Array.prototype.slice.call(menu.querySelectorAll(ITEM));
  }

  function stillOpen() {
    // A live frame may have swapped the entry (and its menu) out while it was open.
    if (current && !(current.menu.isConnected && current.button.isConnected)) current = null;
    return current;
  }

  function open(button, where) {
    close(false);
    var menu = menuOf(button);
    if (!menu) return;
    menu.hidden = false;
    button.setAttribute("aria-expanded", "true");
    current = { button: button, menu: menu };
    var items = itemsOf(menu);
    if (items.length) items[where === "last" ? items.length - 1 : 0].focus();
  }

  function close(refocus) {
    if (!stillOpen()) return;
    var was = current;
    current = null;
    was.menu.hidden = true;
    was.button.setAttribute("aria-expanded", "false");
    if (refocus) was.button.focus();
  }

  function move(item, step) {
    var items = itemsOf(current.menu);
    var at = items.indexOf(item);
    var next;
    if (step === "first") next = 0;
    else if (step === "last") next = items.length - 1;
    else next = (at + step + items.length) % items.length;
    items[next].focus();
  }

  /* Details: open the entry's disclosure through its summary (a click, so chatui.js
   * remembers it as the reader's choice across live frames) and focus that summary. */
  function showDetails(item) {
    var entry = item.closest("[data-role=tool]");
    var details = entry && entry.querySelector(":scope > [data-tool-details]");
    close(!details);
    if (!details) return;
    var summary = details.querySelector(":scope > summary");
    if (!details.open) summary.click();
    summary.focus({ preventScroll: true });
    details.scrollIntoView({ block: "nearest" });
  }

  /* Screen readers hear the copy's outcome; sighted readers see it on the item. */
  function announceCopy(item) {
    var region = document.getElementById("announcer");
    if (!region || !window.MutationObserver) return;
    var label = item.textContent;
    var watch = new MutationObserver(function () {
      var said = FEEDBACK[item.textContent];
      if (!said) return;
      watch.disconnect();
      region.textContent = label.replace(/^Copy /, "").replace(/^./, function (c) {
        return c.toUpperCase();
      }) + said;
    });
    watch.observe(item, { childList: true, characterData: true, subtree: true });
    setTimeout(function () { watch.disconnect(); }, 10000);
  }

  document.addEventListener("click", function (event) {
    if (!event.target.closest) return;
    var button = event.target.closest(BUTTON);
    if (button) {
      if (stillOpen() && current.button === button) close(true);
      else open(button, "first");
      return;
    }
    var item = event.target.closest("[data-tool-menu] " + ITEM);
    if (item) {
      if (item.hasAttribute("data-tool-menu-details")) showDetails(item);
      else if (item.matches("[data-copy-output], [data-copy-args]")) announceCopy(item);
      return;
    }
    // Closing Details by its summary hides it (chatui.css): focus goes back to the button.
    var summary = event.target.closest("[data-tool-details] > summary");
    if (summary && summary.parentNode.open) {
      var toggle = summary.closest("[data-role=tool]").querySelector(":scope > .tool-head " + BUTTON);
      setTimeout(function () {
        if (toggle && !summary.parentNode.open) toggle.focus();
      }, 0);
    }
    if (stillOpen() && !current.menu.contains(event.target)) close(false);
  });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.altKey || event.metaKey || !event.target.closest) return;
    var button = event.target.closest(BUTTON);
    if (button && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
      event.preventDefault();
      open(button, event.key === "ArrowUp" ? "last" : "first");
      return;
    }
    if (!stillOpen() || !current.menu.contains(event.target)) return;
    var item = event.target.closest(ITEM);
    switch (event.key) {
      case "ArrowDown": move(item, 1); break;
      case "ArrowUp": move(item, -1); break;
      case "Home": move(item, "first"); break;
      case "End": move(item, "last"); break;
      case "Escape": close(true); break;
      case "Tab":
        // Focus back on the button first: the browser's Tab then moves on from it.
        close(true);
        return;
      default:
        return;
    }
    event.preventDefault();
  });

  // Focus gone elsewhere (a click in the page, a screen reader's own navigation): close.
  document.addEventListener("focusin", function (event) {
    if (!stillOpen()) return;
    if (current.menu.contains(event.target) || current.button === event.target) return;
    close(false);
  });
})();
