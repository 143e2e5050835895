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
      navigator.clipboard.writeText(value.trim()).then(
        function () { if (status) status.textContent = "Copied to the clipboard."; },
        function () {
          if (target.select) target.select();
          if (status) status.textContent = "Could not copy: the value is selected, press Ctrl+C (⌘C).";
        }
      );
    });
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
