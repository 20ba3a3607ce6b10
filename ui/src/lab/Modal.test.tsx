import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import { Modal } from "./Modal";

afterEach(cleanup);

function Fields({ onClose }: { onClose: () => void }) {
  return (
    <Modal title="Two fields" onClose={onClose}>
      <input aria-label="First" />
      <input aria-label="Second" />
    </Modal>
  );
}

describe("Modal", () => {
  it("focuses its first field once; a parent re-render with a new onClose keeps the focus where the user put it", () => {
    const closed: string[] = [];
    const { rerender } = render(<Fields onClose={() => closed.push("first")} />);
    expect(document.activeElement).toBe(screen.getByLabelText("First"));
    screen.getByLabelText("Second").focus();
    // A parent renders again (a refetch arrived) and passes a new closure.
    rerender(<Fields onClose={() => closed.push("second")} />);
    expect(document.activeElement).toBe(screen.getByLabelText("Second"));
    // Escape calls the newest onClose, once.
    act(() => {
      fireEvent.keyDown(window, { key: "Escape" });
    });
    expect(closed).toEqual(["second"]);
  });
});
