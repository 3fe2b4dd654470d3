import { type WarmTarget, type WarmWindow, weekdays } from '../schemas/warm-targets.ts';

/** When a warm target is kept: its UTC windows (lib/schemas/warm-targets.ts). */

function minutesOf(text: string): number {
  const [hours = 0, minutes = 0] = text.split(':').map(Number);
  return hours * 60 + minutes;
}

/** Whether `now` falls in one of the windows (none: always). A window whose `to` is before `from` wraps midnight. */
export function inWindows(windows: readonly WarmWindow[] | undefined, now: Date): boolean {
  if (windows === undefined) return true;
  const minute = now.getUTCHours() * 60 + now.getUTCMinutes();
  const today = weekdays[now.getUTCDay()] ?? 'sun';
  const yesterday = weekdays[(now.getUTCDay() + 6) % 7] ?? 'sat';
  return windows.some((window) => {
    const from = minutesOf(window.from);
    const to = minutesOf(window.to);
    const on = (day: (typeof weekdays)[number]) => window.days === undefined || window.days.includes(day);
    if (from === to) return on(today);
    if (from < to) return on(today) && minute >= from && minute < to;
    // Past midnight: the evening part belongs to today, the morning part to the window that began yesterday.
    return (on(today) && minute >= from) || (on(yesterday) && minute < to);
  });
}

/** The size a target asks for now: its size inside its windows, 0 outside. */
export function sizeNow(target: WarmTarget, now: Date): number {
  return inWindows(target.windows, now) ? target.size : 0;
}
