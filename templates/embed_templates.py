"""Turns template files into a C++ header of string_view constants (one per file)."""
import os
import re
import sys


def main() -> None:
    out_path, inputs = sys.argv[1], sys.argv[2:]
    lines = ["// Generated from templates/ by embed_templates.py. Do not edit.",
             "#pragma once", "#include <string_view>", "namespace aotc::templates {"]
    for path in inputs:
        name = re.sub(r"[^0-9A-Za-z]", "_", os.path.basename(path))
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if ")aotc_template\"" in text:
            sys.exit(f"{path}: contains the raw-string delimiter")
        lines.append(f'inline constexpr std::string_view {name} = R"aotc_template({text})aotc_template";')
    lines.append("}  // namespace aotc::templates")
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
