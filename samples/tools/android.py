"""Android samples: folders of uiautomator dumps (`step_NN.xml`), `actions.jsonl`, `task.json`.

Dumps are written the way `uiautomator dump` writes them on a recent device:
one line, single-quoted XML declaration, `<hierarchy rotation="0">`, one
`<node>` per view with the attributes in uiautomator's order (index, text,
resource-id, class, package, content-desc, checkable, checked, clickable,
enabled, focusable, focused, scrollable, long-clickable, password, selected,
bounds). Every window on screen is a top-level node: the status bar, the app,
and the input method while the keyboard is up. Screen 1080x2400.
"""

import copy
import json
import os

from common import Node, esc, prediction_row, replace_once, write_jsonl, write_png, write_text

W, H = 1080, 2400
STATUS_H = 132
NAV_TOP = 2337
KBD_TOP = 1530  # top of the input-method window (suggestion strip + keys)


class V(Node):
    """One view node."""

    FIELDS = dict(rid="", text="", desc="", b=(0, 0, 0, 0), click=False, focusable=False, focused=False,
                  checkable=False, checked=False, enabled=True, scroll=False, long=False, password=False,
                  selected=False, pkg=None, key=None)

    def __init__(self, cls, *children, **fields):
        super().__init__(children, fields)
        self.cls = cls
        self.focusable = self.focusable or self.click


def b2s(v):
    return "true" if v else "false"


def dump(windows):
    out = ["<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"]

    def ser(n, index, pkg):
        pkg = n.pkg or pkg
        l, t, r, bt = n.b
        attrs = (f'index="{index}" text="{esc(n.text)}" resource-id="{esc(n.rid)}" class="{n.cls}" package="{pkg}" '
                 f'content-desc="{esc(n.desc)}" checkable="{b2s(n.checkable)}" checked="{b2s(n.checked)}" '
                 f'clickable="{b2s(n.click)}" enabled="{b2s(n.enabled)}" focusable="{b2s(n.focusable)}" '
                 f'focused="{b2s(n.focused)}" scrollable="{b2s(n.scroll)}" long-clickable="{b2s(n.long)}" '
                 f'password="{b2s(n.password)}" selected="{b2s(n.selected)}" bounds="[{l},{t}][{r},{bt}]"')
        if not n.children:
            out.append(f"<node {attrs} />")
            return
        out.append(f"<node {attrs}>")
        for i, c in enumerate(n.children):
            ser(c, i, pkg)
        out.append("</node>")

    for i, w in enumerate(windows):
        ser(w, i, w.pkg)
    out.append("</hierarchy>")
    return "".join(out)


def center(n):
    l, t, r, b = n.b
    return (l + r) // 2, (t + b) // 2


def touch(action_type, windows, key):
    """A touch action (`click`, `long_press`) at the centre of the app view
    `key` in the screen `windows`."""
    x, y = center(windows[1].find(key))
    return {"action_type": action_type, "x": x, "y": y}


# ---- shared windows ----------------------------------------------------------------------------------------

def status_bar(airplane=False, battery=78):
    icons = []
    if airplane:
        icons.append(V("android.widget.ImageView", rid="com.android.systemui:id/airplane", desc="Airplane mode.",
                       b=(838, 48, 880, 90)))
    else:
        icons.append(V("android.widget.ImageView", rid="com.android.systemui:id/wifi_signal", desc="Wifi signal full.",
                       b=(838, 48, 880, 90)))
        icons.append(V("android.widget.ImageView", rid="com.android.systemui:id/mobile_signal",
                       desc="Phone signal full.", b=(884, 48, 926, 90)))
    icons.append(V("android.widget.LinearLayout",
                   V("android.widget.ImageView", rid="com.android.systemui:id/battery_icon", b=(938, 50, 968, 88)),
                   rid="com.android.systemui:id/battery", desc=f"Battery {battery} percent.", b=(934, 42, 1038, 96)))
    return V("android.widget.FrameLayout",
             V("android.widget.FrameLayout",
               V("android.widget.TextView", rid="com.android.systemui:id/clock", text="10:24", desc="10:24 AM",
                 b=(56, 42, 150, 96)),
               V("android.widget.LinearLayout", *icons, rid="com.android.systemui:id/system_icons",
                 b=(830, 42, 1038, 96)),
               rid="com.android.systemui:id/status_bar", b=(0, 0, W, STATUS_H)),
             b=(0, 0, W, STATUS_H), pkg="com.android.systemui")


IME = "com.android.inputmethod.latin"


def keyboard(suggestions=("I", "The", "I'm")):
    """The input method window: suggestion strip and the main keyboard's keys."""
    strip_top, keys_top = KBD_TOP, KBD_TOP + 126
    sugg = []
    for i, s in enumerate(suggestions):
        sugg.append(V("android.widget.TextView", text=s, b=(i * 360, strip_top, (i + 1) * 360, keys_top), click=True,
                      long=True))
    keys = []
    row_h = 160
    rows = ["qwertyuiop", "asdfghjkl"]
    for r, letters in enumerate(rows):
        off = 0 if r == 0 else 54
        for i, ch in enumerate(letters):
            l = off + i * 108
            keys.append(V("android.view.View", desc=ch, b=(l, keys_top + r * row_h, l + 108, keys_top + (r + 1) * row_h),
                          click=True))
    t3 = keys_top + 2 * row_h
    keys.append(V("android.view.View", desc="Shift", b=(0, t3, 162, t3 + row_h), click=True))
    for i, ch in enumerate("zxcvbnm"):
        l = 162 + i * 108
        keys.append(V("android.view.View", desc=ch, b=(l, t3, l + 108, t3 + row_h), click=True))
    keys.append(V("android.view.View", desc="Delete", b=(918, t3, W, t3 + row_h), click=True, long=True))
    t4 = t3 + row_h
    for desc, l, r in [("Symbols", 0, 162), (",", 162, 270), ("Space", 270, 810), (".", 810, 918), ("Enter", 918, W)]:
        keys.append(V("android.view.View", desc=desc, b=(l, t4, r, min(t4 + row_h, NAV_TOP)), click=True))
    return V("android.widget.FrameLayout",
             V("android.widget.LinearLayout",
               V("android.widget.LinearLayout", *sugg, rid=f"{IME}:id/suggestion_strip_view", b=(0, strip_top, W, keys_top)),
               V("android.widget.FrameLayout",
                 V("com.android.inputmethod.keyboard.MainKeyboardView", *keys, rid=f"{IME}:id/keyboard_view",
                   b=(0, keys_top, W, NAV_TOP)),
                 rid=f"{IME}:id/main_keyboard_frame", b=(0, keys_top, W, NAV_TOP)),
               rid=f"{IME}:id/input_view", b=(0, strip_top, W, NAV_TOP)),
             b=(0, strip_top, W, H), pkg=IME)


def app_window(pkg, *content, bottom=H):
    return V("android.widget.FrameLayout",
             V("android.widget.LinearLayout",
               V("android.widget.FrameLayout", *content, rid="android:id/content", b=(0, 0, W, bottom)),
               b=(0, 0, W, bottom)),
             b=(0, 0, W, bottom), pkg=pkg)


def write_android_trajectory(folder, goal, package, states, actions, preds):
    for i, wins in enumerate(states):
        write_text(os.path.join(folder, f"step_{i:02d}.xml"), dump(wins))
    write_jsonl(os.path.join(folder, "actions.jsonl"),
                [{"step": i, "action": a, "note": note} for i, (a, note) in enumerate(actions)])
    write_text(os.path.join(folder, "task.json"), json.dumps(
        {"goal": goal, "package": package, "screen": {"width": W, "height": H}}, ensure_ascii=False, indent=1) + "\n")
    rows = []
    for step, think, mutate in preds:
        real = dump(states[step])
        obs = mutate(real, states[step]) if mutate else real
        if mutate and obs == real:
            raise ValueError(f"{folder}: prediction for step {step} equals the real state")
        rows.append(prediction_row(step, obs, think, "android-xml"))
    write_jsonl(os.path.join(folder, "predictions.jsonl"), rows)


SHOT_SCALE = 4  # a screenshot pixel covers 4×4 screen px: 270×600 for the 1080×2400 screen

SHOT_COLOURS = {
    "screen": (248, 249, 250),
    "status": (32, 33, 36),
    "text": (60, 64, 67),
    "status_text": (232, 234, 237),
    "icon": (95, 99, 104),
    "switch_on": (26, 115, 232),
    "switch_off": (154, 160, 166),
    "row": (241, 243, 244),
}


def screenshot_rows(windows):
    """A flat synthetic screenshot of the screen `windows` at 1/SHOT_SCALE:
    the status bar dark, each text view a bar as long as its text, icons as
    squares, switches as pills (blue when checked), clickable rows faintly
    shaded. Pixel positions follow the nodes' bounds, so a node's box drawn
    over the image lands on its pixels."""
    w, h = W // SHOT_SCALE, H // SHOT_SCALE
    rows = [bytearray(SHOT_COLOURS["screen"] * w) for _ in range(h)]

    def fill(b, colour):
        l, t, r, bt = (max(0, min(v // SHOT_SCALE, lim)) for v, lim in zip(b, (w, h, w, h)))
        for y in range(t, bt):
            rows[y][l * 3:r * 3] = bytes(colour) * (r - l)

    def draw(n, in_status):
        l, t, r, bt = n.b
        if n.rid == "com.android.systemui:id/status_bar":
            fill(n.b, SHOT_COLOURS["status"])
            in_status = True
        elif n.click and not in_status and n.children:
            fill((l, t + 4, r, bt - 4), SHOT_COLOURS["row"])
        if n.cls.endswith("Switch"):
            fill(n.b, SHOT_COLOURS["switch_on" if n.checked else "switch_off"])
        elif n.cls.endswith("ImageView") or n.cls.endswith("ImageButton"):
            fill((l + 6, t + 6, r - 6, bt - 6), SHOT_COLOURS["status_text" if in_status else "icon"])
        elif n.text:
            height = bt - t
            bar = (l, t + height // 4, min(r, l + 22 * len(n.text)), bt - height // 4)
            fill(bar, SHOT_COLOURS["status_text" if in_status else "text"])
        for c in n.children:
            draw(c, in_status)

    for win in windows:
        draw(win, False)
    return w, h, rows


# =====================================================================================
# 1. Harbor messenger: chat list -> chat -> focus field (keyboard) -> type -> send -> no-op tap
# =====================================================================================

HP = "com.harbor.messenger"
CHATS = [("Mina Okafor", "Are you still coming tonight?", "10:12", 2),
         ("Climbing crew", "Jonas: Wall opens at 6 on Friday", "09:47", 0),
         ("Theo Lindqvist", "Photo", "Yesterday", 0),
         ("Aunt Ilse", "Thanks for the flowers!", "Mon", 0),
         ("Harbor Team", "Welcome to Harbor. Your chats are end-to-end encrypted.", "Sun", 0)]
THREAD = [("in", "Hey! Dinner at Ottoline's at 7, right?", "09:58"),
          ("out", "Yes, I booked for four", "10:03"),
          ("in", "Are you still coming tonight?", "10:12")]


def harbor_list():
    items = []
    top = STATUS_H + 168
    for i, (name, snippet, when, unread) in enumerate(CHATS):
        t = top + i * 196
        kids = [V("android.widget.ImageView", rid=f"{HP}:id/avatar", desc=f"{name} profile photo", b=(42, t + 34, 170, t + 162)),
                V("android.widget.TextView", rid=f"{HP}:id/name", text=name, b=(212, t + 40, 800, t + 96)),
                V("android.widget.TextView", rid=f"{HP}:id/snippet", text=snippet, b=(212, t + 104, 900, t + 154)),
                V("android.widget.TextView", rid=f"{HP}:id/timestamp", text=when, b=(880, t + 44, 1038, t + 92))]
        if unread:
            kids.append(V("android.widget.TextView", rid=f"{HP}:id/unread_badge", text=str(unread),
                          desc=f"{unread} unread messages", b=(974, t + 104, 1038, t + 154)))
        items.append(V("android.widget.LinearLayout", *kids, rid=f"{HP}:id/conversation_item", b=(0, t, W, t + 196),
                       click=True, long=True, key=f"chat:{name}"))
    return app_window(HP,
                      V("android.view.ViewGroup",
                        V("android.widget.TextView", text="Chats", b=(42, STATUS_H + 40, 400, STATUS_H + 128)),
                        V("android.widget.ImageButton", desc="Search", b=(842, STATUS_H + 26, 968, STATUS_H + 152), click=True),
                        V("android.widget.ImageView", desc="More options", b=(968, STATUS_H + 26, 1068, STATUS_H + 152),
                          click=True, long=True),
                        rid=f"{HP}:id/toolbar", b=(0, STATUS_H, W, STATUS_H + 168)),
                      V("androidx.recyclerview.widget.RecyclerView", *items, rid=f"{HP}:id/conversation_list",
                        b=(0, STATUS_H + 168, W, 2117), scroll=True, focusable=True),
                      V("android.widget.ImageButton", rid=f"{HP}:id/fab_new_chat", desc="New chat",
                        b=(870, 1907, 1038, 2075), click=True),
                      V("android.widget.FrameLayout",
                        *[V("android.widget.FrameLayout",
                            V("android.widget.TextView", rid=f"{HP}:id/navigation_bar_item_large_label_view", text=lbl,
                              b=(x0 + 100, 2247, x0 + 260, 2295)),
                            rid=f"{HP}:id/nav_{lbl.lower()}", desc=lbl, b=(x0, 2117, x0 + 360, NAV_TOP), click=True,
                            selected=(lbl == "Chats"))
                          for lbl, x0 in (("Chats", 0), ("Calls", 360), ("Settings", 720))],
                        rid=f"{HP}:id/bottom_navigation", b=(0, 2117, W, NAV_TOP)))


def harbor_chat(draft=None, focused=False, kbd=False, sent=None):
    bottom = KBD_TOP if kbd else NAV_TOP
    composer_top = bottom - 168
    msgs = list(THREAD) + ([("out", sent, "10:26")] if sent else [])
    # bubbles are laid out from the bottom of the message list upwards
    bubbles = []
    y = composer_top - 24
    for kind, text, when in reversed(msgs):
        h = 180
        l, r = (42, 760) if kind == "in" else (320, 1038)
        bubbles.append(V("android.widget.LinearLayout",
                         V("android.widget.TextView", rid=f"{HP}:id/message_text", text=text, b=(l + 36, y - h + 26, r - 36, y - 74)),
                         V("android.widget.TextView", rid=f"{HP}:id/message_time", text=when + ("  ✓✓" if kind == "out" else ""),
                           desc=f"Sent at {when}, read" if kind == "out" and text != sent else (f"Sent at {when}" if kind == "out" else f"Received at {when}"),
                           b=(r - 220, y - 66, r - 36, y - 24), key=f"time:{text}"),
                         rid=f"{HP}:id/message_bubble_{'incoming' if kind == 'in' else 'outgoing'}",
                         b=(l, y - h, r, y), long=True))
        y -= h + 24
    bubbles.reverse()
    list_top = STATUS_H + 168
    bubbles = [bb for bb in bubbles if bb.b[1] >= list_top]
    text = draft if draft else "Message"
    return app_window(HP,
                      V("android.view.ViewGroup",
                        V("android.widget.ImageButton", desc="Navigate up", b=(0, STATUS_H + 21, 126, STATUS_H + 147), click=True),
                        V("android.widget.ImageView", rid=f"{HP}:id/toolbar_avatar", desc="Mina Okafor profile photo",
                          b=(136, STATUS_H + 34, 236, STATUS_H + 134)),
                        V("android.widget.LinearLayout",
                          V("android.widget.TextView", rid=f"{HP}:id/toolbar_title", text="Mina Okafor",
                            b=(262, STATUS_H + 30, 700, STATUS_H + 90), key="title"),
                          V("android.widget.TextView", rid=f"{HP}:id/toolbar_subtitle", text="online",
                            b=(262, STATUS_H + 92, 700, STATUS_H + 138)),
                          b=(262, STATUS_H + 30, 700, STATUS_H + 138), click=True),
                        V("android.widget.ImageButton", rid=f"{HP}:id/action_call", desc="Voice call",
                          b=(816, STATUS_H + 21, 942, STATUS_H + 147), click=True),
                        V("android.widget.ImageView", desc="More options", b=(942, STATUS_H + 21, 1068, STATUS_H + 147),
                          click=True, long=True),
                        rid=f"{HP}:id/toolbar", b=(0, STATUS_H, W, STATUS_H + 168)),
                      V("androidx.recyclerview.widget.RecyclerView", *bubbles, rid=f"{HP}:id/message_list",
                        b=(0, list_top, W, composer_top), scroll=True, focusable=True, key="list"),
                      V("android.widget.LinearLayout",
                        V("android.widget.ImageButton", rid=f"{HP}:id/attach", desc="Attach",
                          b=(12, composer_top + 21, 138, composer_top + 147), click=True),
                        V("android.widget.EditText", rid=f"{HP}:id/compose_text", text=text,
                          b=(138, composer_top + 24, 912, composer_top + 144), click=True, focused=focused, long=True,
                          key="compose"),
                        V("android.widget.ImageButton", rid=f"{HP}:id/send", desc="Send",
                          b=(912, composer_top + 21, 1038, composer_top + 147), click=True, enabled=bool(draft),
                          key="send"),
                        rid=f"{HP}:id/composer", b=(0, composer_top, W, bottom)),
                      bottom=H)


def build_harbor(root):
    folder = os.path.join(root, "android", "harbor-messenger_send_trajectory")
    msg = "Running 10 min late, save me a seat!"
    s = [
        [status_bar(), harbor_list()],
        [status_bar(), harbor_chat()],
        [status_bar(), harbor_chat(focused=True, kbd=True), keyboard()],
        [status_bar(), harbor_chat(draft=msg, focused=True, kbd=True), keyboard(("seat", "seat!", "seats"))],
        [status_bar(), harbor_chat(focused=True, kbd=True, sent=msg), keyboard()],
    ]
    s.append(copy.deepcopy(s[4]))
    actions = [
        (touch("click", s[0], "chat:Mina Okafor"), "open the chat with Mina Okafor"),
        (touch("click", s[1], "compose"), "focus the message field; the keyboard opens and the chat resizes above it"),
        ({"action_type": "type", "text": msg}, "type the reply; Send becomes enabled"),
        (touch("click", s[3], "send"), "send; the message appears at the bottom and the field clears"),
        (touch("click", s[4], "time:Are you still coming tonight?"), "no-op: tap on the time label of an incoming message"),
        (None, "final state; no action taken"),
    ]

    def send_enabled(x, st):
        return x.replace(f'resource-id="{HP}:id/send" class="android.widget.ImageButton" package="{HP}" content-desc="Send" '
                         'checkable="false" checked="false" clickable="true" enabled="false"',
                         f'resource-id="{HP}:id/send" class="android.widget.ImageButton" package="{HP}" content-desc="Send" '
                         'checkable="false" checked="false" clickable="true" enabled="true"')

    def stale_list_bounds(x, st):
        return replace_once(x, f'resource-id="{HP}:id/message_list" class="androidx.recyclerview.widget.RecyclerView" package="{HP}" '
                            'content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="true" '
                            'focused="false" scrollable="true" long-clickable="false" password="false" selected="false" bounds="[0,300][1080,1362]"',
                            f'resource-id="{HP}:id/message_list" class="androidx.recyclerview.widget.RecyclerView" package="{HP}" '
                            'content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="true" '
                            'focused="false" scrollable="true" long-clickable="false" password="false" selected="false" bounds="[0,300][1080,2169]"')

    def sent_text(x, st):
        return replace_once(x, f'text="{msg}" resource-id="{HP}:id/message_text"',
                            f'text="Running 10 minutes late, save me a seat!" resource-id="{HP}:id/message_text"')

    def kbd_gone(x, st):
        return dump([st[0], harbor_chat(focused=False, kbd=False, sent=msg)])

    preds = [
        (1, "Tapping the conversation opens the chat with Mina: toolbar with her name, the recent messages and an empty composer.",
         send_enabled),
        (2, "Focusing the message field brings up the keyboard; the composer moves above it.", stale_list_bounds),
        (3, "Typing fills the field and enables Send; the keyboard suggests completions for the last word.", None),
        (4, "Send adds the outgoing bubble at the bottom with the current time and clears the field.", sent_text),
        (5, "Tapping a message label closes the keyboard.", kbd_gone),
    ]
    write_android_trajectory(folder, "Tell Mina Okafor in Harbor that you are running 10 minutes late.", HP, s,
                             actions, preds)


# =====================================================================================
# 2. Settings: Network & internet -> Airplane mode switch -> scroll no-op -> back
# =====================================================================================

SP = "com.android.settings"


def settings_row(i, top, title, summary, icon=True, switch=None, key=None):
    t = top + i * 210
    kids = []
    if icon:
        kids.append(V("android.widget.LinearLayout",
                      V("android.widget.ImageView", rid="android:id/icon", b=(63, t + 75, 126, t + 138)),
                      rid=f"{SP}:id/icon_frame", b=(42, t, 168, t + 210)))
    kids.append(V("android.widget.RelativeLayout",
                  V("android.widget.TextView", rid="android:id/title", text=title, b=(210, t + 52, 800, t + 110)),
                  *([V("android.widget.TextView", rid="android:id/summary", text=summary, b=(210, t + 110, 800, t + 158),
                       key=f"summary:{title}")] if summary else []),
                  b=(210, t + 52, 800 if switch is not None else 1038, t + 158)))
    if switch is not None:
        kids.append(V("android.widget.LinearLayout",
                      V("android.widget.Switch", rid="android:id/switch_widget", b=(878, t + 76, 1002, t + 134),
                        checkable=True, checked=switch, focusable=False, key=f"switch:{title}"),
                      rid="android:id/widget_frame", b=(836, t, 1038, t + 210)))
    return V("android.widget.LinearLayout", *kids, b=(0, t, W, t + 210), click=True, focusable=True, key=key or f"row:{title}")


def settings_home():
    top = STATUS_H + 322
    rows = [("Network & internet", "Mobile, Wi‑Fi, hotspot"), ("Connected devices", "Bluetooth, pairing"),
            ("Apps", "Assistant, recent apps, default apps"), ("Notifications", "Notification history, conversations"),
            ("Battery", "78%"), ("Storage", "41% used - 75.5 GB free"),
            ("Sound & vibration", "Volume, haptics, Do Not Disturb"), ("Display", "Dark theme, font size, brightness")]
    items = [settings_row(i, top, t, s) for i, (t, s) in enumerate(rows) if top + (i + 1) * 210 <= NAV_TOP]
    return app_window(SP,
                      V("android.widget.LinearLayout",
                        V("android.widget.TextView", rid=f"{SP}:id/homepage_title", text="Settings",
                          b=(63, STATUS_H + 40, 1017, STATUS_H + 150)),
                        V("android.widget.FrameLayout",
                          V("android.widget.TextView", rid=f"{SP}:id/search_action_bar_title", text="Search settings",
                            b=(168, STATUS_H + 212, 900, STATUS_H + 268)),
                          rid=f"{SP}:id/search_action_bar", b=(42, STATUS_H + 182, 1038, STATUS_H + 298), click=True),
                        b=(0, STATUS_H, W, STATUS_H + 322)),
                      V("androidx.recyclerview.widget.RecyclerView", *items, rid=f"{SP}:id/recycler_view",
                        b=(0, top, W, NAV_TOP), scroll=True, focusable=True))


def settings_network(airplane=False):
    top = STATUS_H + 420
    rows = [
        settings_row(0, top, "Internet", "Airplane mode is on" if airplane else "Larkspur-5G"),
        settings_row(1, top, "Calls & SMS", "Airplane mode" if airplane else "Northwind Mobile"),
        settings_row(2, top, "SIMs", "Northwind Mobile"),
        settings_row(3, top, "Airplane mode", "", switch=airplane),
        settings_row(4, top, "Hotspot & tethering", "Off"),
        settings_row(5, top, "Data Saver", "Off"),
        settings_row(6, top, "VPN", "None"),
        settings_row(7, top, "Private DNS", "Automatic", icon=False) if top + 8 * 210 <= NAV_TOP else None,
    ]
    return app_window(SP,
                      V("android.widget.FrameLayout",
                        V("android.view.ViewGroup",
                          V("android.widget.ImageButton", desc="Navigate up", b=(0, STATUS_H + 21, 147, STATUS_H + 168), click=True),
                          rid=f"{SP}:id/action_bar", b=(0, STATUS_H, W, STATUS_H + 189)),
                        V("android.widget.TextView", text="Network & internet", b=(63, STATUS_H + 240, 1017, STATUS_H + 380)),
                        rid=f"{SP}:id/collapsing_toolbar", b=(0, STATUS_H, W, top)),
                      V("androidx.recyclerview.widget.RecyclerView", *rows, rid=f"{SP}:id/recycler_view",
                        b=(0, top, W, NAV_TOP), scroll=True, focusable=True, key="list"))


def build_settings(root):
    folder = os.path.join(root, "android", "settings_airplane-mode_trajectory")
    s = [
        [status_bar(), settings_home()],
        [status_bar(), settings_network()],
        [status_bar(airplane=True), settings_network(airplane=True)],
    ]
    s.append(copy.deepcopy(s[2]))
    s.append([status_bar(airplane=True), settings_home()])
    actions = [
        (touch("click", s[0], "row:Network & internet"), "open Network & internet"),
        (touch("click", s[1], "switch:Airplane mode"), "turn Airplane mode on; Wi-Fi and mobile drop, the status bar shows the plane icon"),
        ({"action_type": "scroll", "direction": "down"}, "no-op: the list already fits on the screen"),
        ({"action_type": "navigate_back"}, "back to the Settings home page"),
        (None, "final state; no action taken"),
    ]

    def drop_vpn(x, st):
        wins = copy.deepcopy(st)
        lst = wins[1].find("list")
        lst.children = [c for c in lst.children if c.key != "row:VPN"]
        return dump(wins)

    def switch_off(x, st):
        return x.replace('resource-id="android:id/switch_widget" class="android.widget.Switch" package="com.android.settings" '
                         'content-desc="" checkable="true" checked="true"',
                         'resource-id="android:id/switch_widget" class="android.widget.Switch" package="com.android.settings" '
                         'content-desc="" checkable="true" checked="false"')

    def stale_status(x, st):
        return dump([status_bar(airplane=False), st[1]])

    preds = [
        (1, "Opening Network & internet shows Internet, Calls & SMS, SIMs, Airplane mode and the tethering options.", drop_vpn),
        (2, "Airplane mode turns on: Wi-Fi and mobile disconnect, so the Internet and Calls & SMS summaries change and the status bar shows the plane.",
         switch_off),
        (3, "The list is shorter than the screen, so scrolling down moves nothing.", None),
        (4, "Back returns to the Settings home page.", stale_status),
    ]
    write_android_trajectory(folder, "Turn on Airplane mode from Settings, then go back to the main Settings page.", SP, s,
                             actions, preds)
    # This trajectory also has screenshots (step_NN.png), for the screenshot view.
    for i, wins in enumerate(s):
        write_png(os.path.join(folder, f"step_{i:02d}.png"), *screenshot_rows(wins))


# =====================================================================================
# 3. Pinecone Notes: new note -> title (keyboard) -> body -> pin -> long-press no-op -> back hides keyboard
# =====================================================================================

NP = "com.pinecone.notes"
NOTES = [("Book club picks", "The Salt Road, Winter Orchard, Nine Bridges"), ("Bike maintenance", "Chain lube every 300 km"),
         ("Gift ideas", "Ceramic mug for Ada, hiking socks")]


def notes_list(extra=None):
    cards = []
    notes = ([extra] if extra else []) + NOTES
    top = STATUS_H + 300
    for i, (title, body) in enumerate(notes):
        t = top + i * 300
        cards.append(V("android.widget.FrameLayout",
                       V("android.widget.TextView", rid=f"{NP}:id/note_title", text=title, b=(84, t + 42, 996, t + 104)),
                       V("android.widget.TextView", rid=f"{NP}:id/note_preview", text=body, b=(84, t + 116, 996, t + 238)),
                       *([V("android.widget.ImageView", rid=f"{NP}:id/pinned_icon", desc="Pinned", b=(940, t + 42, 996, t + 98))]
                         if extra and i == 0 else []),
                       rid=f"{NP}:id/note_card", b=(42, t, 1038, t + 276), click=True, long=True))
    return app_window(NP,
                      V("android.view.ViewGroup",
                        V("android.widget.TextView", text="Notes", b=(42, STATUS_H + 40, 500, STATUS_H + 128)),
                        V("android.widget.ImageButton", rid=f"{NP}:id/action_search", desc="Search notes",
                          b=(942, STATUS_H + 21, 1068, STATUS_H + 147), click=True),
                        rid=f"{NP}:id/toolbar", b=(0, STATUS_H, W, STATUS_H + 168)),
                      V("android.widget.TextView", rid=f"{NP}:id/section_header", text="All notes",
                        b=(42, STATUS_H + 200, 500, STATUS_H + 270)),
                      V("androidx.recyclerview.widget.RecyclerView", *cards, rid=f"{NP}:id/notes_list",
                        b=(0, STATUS_H + 290, W, NAV_TOP), scroll=True, focusable=True),
                      V("com.google.android.material.floatingactionbutton.FloatingActionButton", rid=f"{NP}:id/fab_add",
                        desc="New note", b=(849, 2127, 1038, 2316), click=True, key="fab"))


def note_editor(title="", body="", focus="title", kbd=True, pinned=False):
    bottom = KBD_TOP if kbd else NAV_TOP
    return app_window(NP,
                      V("android.view.ViewGroup",
                        V("android.widget.ImageButton", desc="Navigate up", b=(0, STATUS_H + 21, 126, STATUS_H + 147), click=True),
                        V("android.widget.ToggleButton", rid=f"{NP}:id/action_pin", text="", desc="Pin note",
                          b=(816, STATUS_H + 21, 942, STATUS_H + 147), click=True, checkable=True, checked=pinned, key="pin"),
                        V("android.widget.ImageView", desc="More options", b=(942, STATUS_H + 21, 1068, STATUS_H + 147),
                          click=True, long=True),
                        rid=f"{NP}:id/toolbar", b=(0, STATUS_H, W, STATUS_H + 168)),
                      V("android.widget.ScrollView",
                        V("android.widget.LinearLayout",
                          V("android.widget.EditText", rid=f"{NP}:id/note_title", text=title or "Title",
                            b=(42, STATUS_H + 190, 1038, STATUS_H + 310), click=True, long=True, focused=focus == "title",
                            key="title"),
                          V("android.widget.TextView", rid=f"{NP}:id/edited_time", text="Edited 10:25",
                            b=(42, STATUS_H + 318, 600, STATUS_H + 366), key="edited"),
                          V("android.widget.EditText", rid=f"{NP}:id/note_body", text=body or "Note",
                            b=(42, STATUS_H + 390, 1038, bottom - 40), click=True, long=True, focused=focus == "body",
                            key="body"),
                          b=(0, STATUS_H + 168, W, bottom)),
                        rid=f"{NP}:id/editor_scroll", b=(0, STATUS_H + 168, W, bottom), scroll=True, focusable=True))


def build_notes(root):
    folder = os.path.join(root, "android", "pinecone-notes_new-note_trajectory")
    title, body = "Packing list", "Passport, charger, rain jacket, hiking boots"
    s = [
        [status_bar(), notes_list()],
        [status_bar(), note_editor(), keyboard()],
        [status_bar(), note_editor(title), keyboard(("list", "lists", "listing"))],
        [status_bar(), note_editor(title, focus="body"), keyboard()],
        [status_bar(), note_editor(title, body, focus="body"), keyboard(("boots", "boot", "booties"))],
        [status_bar(), note_editor(title, body, focus="body", pinned=True), keyboard(("boots", "boot", "booties"))],
    ]
    s.append(copy.deepcopy(s[5]))
    s.append([status_bar(), note_editor(title, body, focus="body", pinned=True, kbd=False)])
    actions = [
        (touch("click", s[0], "fab"), "new note: the editor opens with the title focused and the keyboard up"),
        ({"action_type": "type", "text": title}, "type the title"),
        (touch("click", s[2], "body"), "move the cursor to the body field"),
        ({"action_type": "type", "text": body}, "type the body"),
        (touch("click", s[4], "pin"), "pin the note (toggle button becomes checked)"),
        (touch("long_press", s[5], "edited"), "no-op: long press on the 'Edited' label, which is not long-clickable"),
        ({"action_type": "navigate_back"}, "Back with the keyboard open only hides the keyboard"),
        (None, "final state; no action taken"),
    ]

    def no_kbd(x, st):
        return dump(st[:2])

    def title_still_focused(x, st):
        return dump([st[0], note_editor(title, focus="title"), st[2]])

    def typo(x, st):
        return replace_once(x, f'text="{body}"', 'text="Passport, charger, rain jacket, boots"')

    def pin_unchecked(x, st):
        return dump([st[0], note_editor(title, body, focus="body", pinned=False), st[2]])

    def popup(x, st):
        wins = copy.deepcopy(st)
        wins.insert(2, V("android.widget.FrameLayout",
                         V("android.widget.LinearLayout",
                           V("android.widget.TextView", text="Copy", b=(80, 402, 260, 528), click=True),
                           V("android.widget.TextView", text="Select all", b=(260, 402, 500, 528), click=True),
                           b=(80, 402, 500, 528)),
                         b=(80, 402, 500, 528), pkg=NP))
        return dump(wins)

    def left_editor(x, st):
        return dump([st[0], notes_list(extra=(title, body))])

    preds = [
        (1, "The FAB opens an empty note editor; the title field takes focus.", no_kbd),
        (2, "Typing goes into the focused title field; the keyboard offers completions.", None),
        (3, "Tapping the body moves focus there.", title_still_focused),
        (4, "The body text is typed into the note.", typo),
        (5, "Tapping the pin icon pins the note.", pin_unchecked),
        (6, "A long press on the label may offer a text selection menu.", popup),
        (7, "Back leaves the editor; the new pinned note is saved at the top of the list.", left_editor),
    ]
    write_android_trajectory(folder, "Create a pinned note titled 'Packing list' with the items passport, charger, rain "
                             "jacket and hiking boots.", NP, s, actions, preds)


def build_all(root):
    build_harbor(root)
    build_settings(root)
    build_notes(root)
