// Corvid's control page. Every page works without this file; it keeps the live parts up to
// date (data-live: the overview; data-chat: the chat) and sends chat messages without a reload.
"use strict";

const csrf = document.querySelector('meta[name="csrf"]')?.content ?? "";

function follow(el) {
  const source = new EventSource(el.dataset.live);
  source.addEventListener("overview", (event) => {
    el.innerHTML = event.data; // rendered and escaped by the server
  });
  source.onerror = () => el.classList.add("stale"); // the browser reconnects by itself
  source.onopen = () => el.classList.remove("stale");
}

function chat(box) {
  const draft = document.getElementById("draft");
  const typing = document.getElementById("typing");
  const form = document.getElementById("say");
  const text = form.querySelector("textarea");
  const files = form.querySelector('input[type="file"]');
  // The box scrolls, not the page: the newest message is at its bottom.
  const bottom = () => {
    box.scrollTop = box.scrollHeight;
  };
  box.addEventListener("load", bottom, true); // an image that arrives makes the chat taller
  const source = new EventSource(box.dataset.chat);
  source.addEventListener("message", (event) => {
    box.querySelector(".empty")?.remove();
    draft.insertAdjacentHTML("beforebegin", event.data); // rendered and escaped by the server
    bottom();
  });
  source.addEventListener("draft", (event) => {
    draft.innerHTML = event.data;
    draft.hidden = event.data === "";
    bottom();
  });
  source.addEventListener("reload", () => location.reload()); // fell behind: read it anew
  source.addEventListener("typing", (event) => {
    typing.hidden = event.data !== "on";
  });
  source.onerror = () => box.classList.add("stale");
  source.onopen = () => box.classList.remove("stale");

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = new FormData(form);
    if (!text.value.trim() && !files.files.length) return;
    text.value = "";
    files.value = "";
    const answer = await fetch("/chat", { method: "POST", body, headers: { "X-CSRF-Token": csrf } });
    if (!answer.ok) {
      box.insertAdjacentHTML("beforeend", '<p class="notice error">Not sent; reload the page.</p>');
    }
  });
  text.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  text.addEventListener("paste", (event) => {
    const pasted = [...event.clipboardData.files].filter((f) => f.type.startsWith("image/"));
    if (!pasted.length) return;
    const all = new DataTransfer();
    [...files.files, ...pasted].forEach((f) => all.items.add(f));
    files.files = all.files;
  });
  bottom();
}

document.querySelectorAll("[data-live]").forEach(follow);
document.querySelectorAll("[data-chat]").forEach(chat);
