/* "Show N earlier calls" in a windowed tool batch (docs/rendering.md#long-transcripts). The control is a link
 * that works without JavaScript; here it fetches the earlier entries as a fragment
 * and puts them in place of the control. The transcript carries hx-disable (SEC1),
 * so htmx attributes inside it are inert: the click is handled here. */
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[data-earlier-calls]");
    if (!link || event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    var control = link.closest("[data-earlier-calls-item]");
    if (!control) return;
    event.preventDefault();
    if (link.getAttribute("aria-busy") === "true") return;
    link.setAttribute("aria-busy", "true");
    fetch(link.href, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (html) {
        if (!control.isConnected) return; // a live frame replaced the batch meanwhile
        var template = document.createElement("template");
        template.innerHTML = html;
        control.replaceWith(template.content);
      })
      .catch(function () {
        link.removeAttribute("aria-busy");
        window.location.href = link.href; // the page works without the fragment
      });
  });
})();
