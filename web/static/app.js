// Refreshes the page's <main> every 5 s while the box is ticked (the
// choice is kept in localStorage). Pages work without this script.
(function () {
  var box = document.getElementById("autorefresh");
  if (!box) return;
  box.checked = localStorage.getItem("coordinated.refresh") === "1";
  var timer = null;
  function refresh() {
    fetch(location.href, {headers: {"Accept": "text/html"}}).then(function (r) {
      return r.ok ? r.text() : null;
    }).then(function (html) {
      if (!html) return;
      var doc = new DOMParser().parseFromString(html, "text/html");
      var fresh = doc.querySelector("main"), cur = document.querySelector("main");
      if (fresh && cur) cur.replaceWith(fresh);
    }).catch(function () {});
  }
  function arm() {
    if (timer) clearInterval(timer);
    timer = box.checked ? setInterval(refresh, 5000) : null;
  }
  box.addEventListener("change", function () {
    localStorage.setItem("coordinated.refresh", box.checked ? "1" : "0");
    arm();
  });
  arm();
})();
