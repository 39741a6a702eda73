/// Row numbers found by a 64-bit hash (`IdHash`, already mixed): open addressing with linear probing, at most half
/// full. The owner keeps the rows and their hashes, and says which row a probe has found: `KeyedRows` compares the
/// hash and then the id, `IdHashSet` the hash alone.
@usableFromInline struct HashSlots: Sendable {
    /// Row numbers; -1 marks an empty slot. A power of two long.
    @usableFromInline var slots: [Int32] = []

    @inlinable init() {}

    /// The slot of the row that `matches` accepts, and that row; or the empty slot where a new row would go.
    @inlinable @inline(__always)
    func find(_ hash: UInt64, matches: (Int) -> Bool) -> (slot: Int, row: Int?) {
        guard !slots.isEmpty else { return (0, nil) }
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let row = Int(slots[slot])
            if row < 0 { return (slot, nil) }
            if matches(row) { return (slot, row) }
            slot = (slot + 1) & mask
        }
    }

    /// Places the owner's last row, already appended with its hash, in the empty `slot` that `find` gave; when that
    /// would make the table over half full, it grows instead and places every row again.
    @inlinable mutating func add(_ hashes: ContiguousArray<UInt64>, at slot: Int) {
        guard hashes.count * 2 <= slots.count else { return rebuild(hashes) }
        slots[slot] = Int32(hashes.count - 1)
    }

    /// Sizes the table to at least twice the rows (and `minimumSize`) and places every row again.
    @inlinable mutating func rebuild(_ hashes: ContiguousArray<UInt64>, minimumSize: Int = 16) {
        var size = minimumSize
        while size < hashes.count * 2 { size <<= 1 }
        slots = [Int32](repeating: -1, count: size)
        let mask = size - 1
        for row in hashes.indices {
            var slot = Int(truncatingIfNeeded: hashes[row]) & mask
            while slots[slot] >= 0 { slot = (slot + 1) & mask }
            slots[slot] = Int32(row)
        }
    }
}

/// The ids seen so far, by their `IdHash` (a plan's duplicate check). A `Set<UInt64>` hashed each hash again, and
/// grew by rehashing everything.
struct IdHashSet {
    private var hashes: ContiguousArray<UInt64> = []
    private var slots = HashSlots()

    init(_ saved: [UInt64] = []) {
        hashes.reserveCapacity(saved.count)
        slots.rebuild(hashes, minimumSize: 1 << 16)
        for hash in saved { _ = insert(hash) }
    }

    var count: Int { hashes.count }

    /// True when the hash was not there yet.
    mutating func insert(_ hash: UInt64) -> Bool {
        let (slot, row) = slots.find(hash) { hashes[$0] == hash }
        guard row == nil else { return false }
        hashes.append(hash)
        slots.add(hashes, at: slot)
        return true
    }
}
