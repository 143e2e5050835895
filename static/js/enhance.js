/* Progressive enhancement only: every page works without this file. */
(function () {
  "use strict";
  // Copy buttons: the value stays visible and selectable without JavaScript.
  document.querySelectorAll("button[data-copy-target]").forEach(function (button) {
    var target = document.getElementById(button.getAttribute("data-copy-target"));
    var status = document.getElementById(button.getAttribute("data-copy-status"));
    if (!target || !navigator.clipboard) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      var value = "value" in target ? target.value : target.textContent;
      // The words are the page's, in its language (data-copied, data-copy-failed on the status).
      navigator.clipboard.writeText(value.trim()).then(
        function () { if (status) status.textContent = status.getAttribute("data-copied"); },
        function () {
          if (target.select) target.select();
          if (status) status.textContent = status.getAttribute("data-copy-failed");
        }
      );
    });
  });
  // A passkey ceremony the browser stopped (allauth's webauthn.js announces it as "allauth.error"):
  // said on the page, in the live region of every page's messages, with the browser's own error
  // and what it usually means (the words are the page's: mfa/webauthn/snippets/scripts.html).
  document.addEventListener("allauth.error", function (event) {
    var detail = event.detail || {};
    var words = document.getElementById("passkey-error-words");
    var region = document.querySelector(".messages");
    if (!words || !region || (detail.tags || []).indexOf("webauthn") < 0) return;
    var error = detail.exception || {};
    var name = String(error.name || "Error");
    var line = document.createElement("p");
    line.className = "message error passkey-error";
    var said = name + (error.message ? ": " + error.message : "");
    var hint = words.getAttribute("data-" + name.toLowerCase());
    line.textContent = words.getAttribute("data-prefix") + " " + (hint ? hint + " " : "") + "(" + said + ")";
    region.querySelectorAll(".passkey-error").forEach(function (old) { old.remove(); });
    region.appendChild(line);
  });
  // Select every scope of one resource in the scope picker.
  document.querySelectorAll(".scope-resource").forEach(function (group) {
    var button = group.querySelector(".select-resource");
    if (!button) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      group.querySelectorAll("input[type=checkbox]").forEach(function (box) { box.checked = true; });
    });
  });
})();
