// The streamed answer: the form is posted to /garage/ask/stream and the answer's words are
// shown as the model writes them (as text: never parsed as HTML). The last line carries the
// result the server rendered and escaped. Stop, or leaving the page, aborts the request; the
// server then stops the model. Without this script the form posts to /garage/ask and the
// answer arrives whole.
"use strict";
(function () {
  const form = document.getElementById("ask");
  if (!form || !window.fetch || !window.AbortController) return;
  const stop = document.getElementById("stop");
  const progress = document.getElementById("progress");
  const result = document.getElementById("result");
  let running = null;

  function finish(state) {
    running = null;
    stop.hidden = true;
    form.querySelector("button[type=submit]").disabled = false;
    result.dataset.state = state;
  }

  stop.addEventListener("click", function () {
    if (running) running.abort();
    progress.textContent = "Stopped.";
    finish("stopped");
  });

  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    if (running) running.abort();
    const controller = new AbortController();
    running = controller;
    stop.hidden = false;
    form.querySelector("button[type=submit]").disabled = true;
    result.dataset.state = "running";
    result.replaceChildren();
    const draft = document.createElement("p");
    draft.className = "answer draft";
    draft.id = "draft";
    result.appendChild(draft);
    progress.textContent = "Searching…";
    try {
      const response = await fetch(form.action + "/stream", {
        method: "POST",
        body: new URLSearchParams(new FormData(form)),
        signal: controller.signal,
      });
      if (!response.ok || !response.body) throw new Error("the server answered " + response.status);
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let newline;
        while ((newline = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          if (line) handle(JSON.parse(line), draft);
        }
      }
      if (result.dataset.state === "running") finish("done");
    } catch (error) {
      if (controller.signal.aborted) return;
      progress.textContent = "Failed: " + error.message;
      finish("error");
    }
  });

  function handle(item, draft) {
    if (item.progress) progress.textContent = item.progress;
    if (item.text) {
      progress.textContent = "Writing…";
      draft.textContent += item.text;
    }
    if (item.error) {
      progress.textContent = "";
      const p = document.createElement("p");
      p.className = "error";
      p.setAttribute("role", "alert");
      p.textContent = item.error;
      result.replaceChildren(p);
      finish("error");
    }
    if (item.html !== undefined) {
      // Rendered by the server from escaped text: the same markup the page shows without JS.
      const parsed = new DOMParser().parseFromString(item.html, "text/html");
      result.replaceChildren(...parsed.body.childNodes);
      progress.textContent = "";
      finish("done");
    }
  }

  window.addEventListener("pagehide", function () {
    if (running) running.abort();
  });
})();
