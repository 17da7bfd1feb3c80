// The toolgate admin console's one script, served from the binary (the CSP allows scripts from
// 'self' only: nothing inline, nothing evaluated). Pages work without it; it adds what HTML
// alone cannot: regions marked data-refresh="<url>" replace their content with the fragment at
// that URL every data-every milliseconds (the Live page), without reloading the page.
"use strict";
(function () {
  function refresh(region) {
    var url = region.getAttribute("data-refresh");
    var every = parseInt(region.getAttribute("data-every") || "1000", 10);
    function tick() {
      fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (response) {
          if (response.status === 401 || response.redirected) {
            window.location.assign("/console/");
            return null;
          }
          return response.ok ? response.text() : null;
        })
        .then(function (html) {
          if (html !== null && html !== undefined) {
            var parsed = new DOMParser().parseFromString(html, "text/html");
            region.replaceChildren.apply(region, Array.prototype.slice.call(parsed.body.childNodes));
          }
        })
        .catch(function () { /* the next tick tries again */ })
        .finally(function () { window.setTimeout(tick, every); });
    }
    window.setTimeout(tick, every);
  }
  document.querySelectorAll("[data-refresh]").forEach(refresh);
})();
