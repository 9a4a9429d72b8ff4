/* A tool entry's texts beyond the page's bound (issue 28): its full output, its Details
 * and the args Copy args copies stay on the server until the reader wants them. Each
 * control is a link that works without JavaScript (the text as a page of its own);
 * here, opening the <details> around it puts the text in place, and a Copy button with
 * data-copy-url fetches what it copies. The transcript carries hx-disable (SEC1), so
 * htmx attributes inside it are inert: the fetches are made here. */
(function () {
  "use strict";

  function fetchFragment(url) {
    return fetch(url, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (html) {
        var template = document.createElement("template");
        template.innerHTML = html; // escaped text in one <pre>; a template runs nothing
        return template.content;
      });
  }

  /* Replace a [data-tool-deferred] placeholder by the text it links to, once. */
  function load(placeholder) {
    var link = placeholder.querySelector("a[data-tool-load]");
    if (!link || placeholder.getAttribute("aria-busy") === "true") return;
    placeholder.setAttribute("aria-busy", "true");
    fetchFragment(link.href)
      .then(function (fragment) {
        if (placeholder.isConnected) placeholder.replaceWith(fragment);
      })
      .catch(function () {
        placeholder.removeAttribute("aria-busy"); // the link still opens it as a page
      });
  }

  // toggle does not bubble: listen in the capture phase.
  document.addEventListener(
    "toggle",
    function (event) {
      var details = event.target;
      if (!(details instanceof HTMLDetailsElement) || !details.open) return;
      var placeholder = details.querySelector(":scope > [data-tool-deferred]");
      if (placeholder) load(placeholder);
    },
    true
  );

  document.addEventListener("click", function (event) {
    if (!event.target.closest) return;
    var link = event.target.closest("a[data-tool-load]");
    if (link && event.button === 0 && !(event.metaKey || event.ctrlKey || event.shiftKey)) {
      var placeholder = link.closest("[data-tool-deferred]");
      if (placeholder) {
        event.preventDefault();
        load(placeholder);
      }
      return;
    }
    var button = event.target.closest("button[data-copy-url]");
    if (button) copyFetched(button);
  });

  /* Copy a text that is not in the page. ClipboardItem takes the text as a promise, so
   * the copy still counts as the click's even though the text arrives later. */
  function copyFetched(button) {
    if (!navigator.clipboard || button.getAttribute("aria-busy") === "true") return;
    button.setAttribute("aria-busy", "true");
    var text = fetchFragment(button.getAttribute("data-copy-url")).then(function (fragment) {
      var pre = fragment.querySelector("pre");
      if (!pre) throw new Error("no text");
      return pre.textContent;
    });
    var copied;
    if (window.ClipboardItem && navigator.clipboard.write) {
      var blob = text.then(function (value) {
        return new Blob([value], { type: "text/plain" });
      });
      copied = navigator.clipboard.write([new ClipboardItem({ "text/plain": blob })]);
    } else {
      copied = text.then(function (value) {
        return navigator.clipboard.writeText(value);
      });
    }
    var label = button.textContent;
    copied
      .then(
        function () {
          button.textContent = "Copied";
        },
        function () {
          button.textContent = "Copy failed";
        }
      )
      .then(function () {
        button.removeAttribute("aria-busy");
        setTimeout(function () {
          button.textContent = label;
        }, 1200);
      });
  }
})();
