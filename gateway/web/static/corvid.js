// Corvid's control page. Every page works without this file; it only keeps the live parts
// (marked data-live="<event stream URL>") up to date with what the server sends.
"use strict";

function follow(el) {
  const source = new EventSource(el.dataset.live);
  source.addEventListener("overview", (event) => {
    el.innerHTML = event.data; // rendered and escaped by the server
  });
  source.onerror = () => {
    el.classList.add("stale"); // the browser reconnects by itself
  };
  source.onopen = () => el.classList.remove("stale");
}

document.querySelectorAll("[data-live]").forEach(follow);
