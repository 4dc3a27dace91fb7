"""The browser's colours, chosen to stay readable on a 256-colour terminal
and with ``NO_COLOR``.

Textual draws a theme's colours in truecolor; a 256-colour terminal shows
each as the nearest xterm palette colour (Rich's ``Color.downgrade``), and
with ``NO_COLOR`` Textual's Monochrome filter turns each into a grey of the
same luma. Three things Textual's stock dark theme draws fall under WCAG AA
(4.5:1) that way, and are replaced here:

* the block cursor (a table's or list's highlighted row): ``$primary``
  (#0178D4) becomes #0087D7 at 256 colours, 3.6:1 under light text, and
  dim text and coloured markers (``gone``, ``↓1``) on it are near 2:1. A
  dark navy (#102A4C, shown as #00005F) keeps every text on it above 4.5:1;
  the unfocused cursor is a grey, so the two stay distinct;
* ANSI colour names (Rich's ``red``, ``magenta``... in the text the screens
  build, e.g. the compare markers of :data:`tui.present.describe.ROLES`) go through
  the app's ANSI theme. Textual's Monokai draws red and magenta as the same
  #F4005F: 4.3:1 on the panels at 256 colours and a 1.5:1 grey with
  ``NO_COLOR``, the dimmest thing on the screen, although it marks the bad
  news. :data:`ANSI_DARK` gives them lighter tones, told apart;
* with ``NO_COLOR`` colour means nothing, and the Monochrome filter would
  still draw every named colour as a grey of its own luma (green light, red
  dark): :data:`ANSI_NO_COLOR` draws every ANSI colour in the foreground's
  grey, so words, symbols, bold and dim carry the meaning, as intended.
  (No text of the browser uses an ANSI colour as a background.)

The rest (pane titles, placeholders, tabs, fields) is styled in
``app.tcss``. ``tests/tui/test_contrast.py`` measures every text cell of
the key screens at 256 colours and with ``NO_COLOR``.
"""

from __future__ import annotations

from dataclasses import replace

from rich.terminal_theme import TerminalTheme
from textual.theme import BUILTIN_THEMES, Theme

#: The browser's theme name (registered by the app, which starts with it).
THEME_NAME = "rankscope-dark"

#: Textual's dark theme with a block cursor that reads at 256 colours.
RANKSCOPE_DARK: Theme = replace(
    BUILTIN_THEMES["textual-dark"],
    name=THEME_NAME,
    variables={
        "block-cursor-background": "#102A4C",
        "block-cursor-foreground": "#F0F0F0",
        "block-cursor-blurred-background": "#2A2A2A",
        "block-cursor-blurred-foreground": "#E0E0E0",
    },
)


#: Textual's dark ANSI theme (Monokai, ``App.ansi_theme_dark``) with red and
#: magenta, normal and bright, lightened and told apart (#FF7B8A, #E68FF0):
#: 6:1 or more on every panel of the theme and on the block cursor, at 256
#: colours. The other colours are Monokai's.
ANSI_DARK = TerminalTheme(
    (12, 12, 12),
    (217, 217, 217),
    [
        (26, 26, 26),
        (255, 123, 138),
        (152, 224, 36),
        (253, 151, 31),
        (157, 101, 255),
        (230, 143, 240),
        (88, 209, 235),
        (196, 197, 181),
    ],
    [
        (98, 94, 76),
        (255, 123, 138),
        (152, 224, 36),
        (224, 213, 97),
        (157, 101, 255),
        (230, 143, 240),
        (88, 209, 235),
        (246, 246, 239),
    ],
)

#: With ``NO_COLOR``: every ANSI colour is the foreground's (#E0E0E0).
ANSI_NO_COLOR = TerminalTheme((12, 12, 12), (224, 224, 224), [(224, 224, 224)] * 8, [(224, 224, 224)] * 8)
