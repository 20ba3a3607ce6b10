import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LIVE_REFRESH_MS, Sidebar } from "./Sidebar";

afterEach(() => {
  cleanup();
  vi.useRealTimers();
});

describe("Sidebar live episodes", () => {
  it("refreshes the list while the live-episodes filter is on, and only then", () => {
    vi.useFakeTimers();
    const refresh = vi.fn();
    render(<Sidebar trajectories={[]} selectedId={null} onSelect={() => {}} onLiveRefresh={refresh} />);
    vi.advanceTimersByTime(2 * LIVE_REFRESH_MS);
    expect(refresh).not.toHaveBeenCalled();
    const toggle = screen.getByRole("checkbox", { name: "Live episodes" });
    fireEvent.click(toggle);
    vi.advanceTimersByTime(2 * LIVE_REFRESH_MS);
    expect(refresh).toHaveBeenCalledTimes(2);
    fireEvent.click(toggle);
    vi.advanceTimersByTime(3 * LIVE_REFRESH_MS);
    expect(refresh).toHaveBeenCalledTimes(2);
  });
});
