import IdPipeCore

/// A chunk of an export JSON file cut at object boundaries; each part is decoded by one worker.
struct ExportJSONBatch: RawBatch {
    let path: String
    let bytes: [UInt8]
    /// Part `i` is `bytes[boundaries[i]..<boundaries[i + 1]]`.
    let boundaries: [Int]
    /// The line each part starts on.
    let partLines: [Int]
    let baseOffset: Int64
    /// The batch ends the file: the last part must close the array with `]}`.
    let isLast: Bool
    /// Whether the file follows the export's layout, so a broken object can be skipped to its closing `}` line.
    let exportLayout: Bool
    /// The batch starts right after `{"users": [`.
    let atArrayStart: Bool
    /// How the normalize stage reads the export (nil with it off), for the other problems of an account that cannot be read.
    let normalize: AccountNormalizer.Options?
    let checkpoint: InputCheckpoint

    var partCount: Int { boundaries.count - 1 }
    var inputBytes: (bytes: [UInt8], start: Int64)? { (bytes, baseOffset) }

    func decode(part: Int, each: (consuming DecodedRecord) -> Void) {
        bytes.withUnsafeBufferPointer { buffer in
            decode(buffer, part: part, fastPath: FullPathOnly(), each: each, plain: { _ in })
        }
    }

    func decode(part: Int, fastPath: AccountProcessor, each: (consuming DecodedRecord) -> Void, plain: (borrowing PlainRecord) -> Void) {
        bytes.withUnsafeBufferPointer { buffer in
            decode(buffer, part: part, fastPath: fastPath, each: each, plain: plain)
        }
    }

    func decodeIds(part: Int, each: (consuming DecodedRecord) -> Void, plain: (borrowing PlainRecord) -> Void) {
        bytes.withUnsafeBufferPointer { buffer in
            decode(buffer, part: part, fastPath: IdsOnly(), each: each, plain: plain)
        }
    }

    private func decode(_ buffer: UnsafeBufferPointer<UInt8>, part: Int, fastPath: some FastPathCheck, each: (consuming DecodedRecord) -> Void,
                        plain: (borrowing PlainRecord) -> Void) {
        var cursor = JSONCursor(bytes: buffer, start: boundaries[part], end: boundaries[part + 1])
        let baseLine = partLines[part]
        let lastPart = isLast && part == partCount - 1
        var closed = false
        // Between objects a comma is expected, except before the first object of the array.
        var expectComma = !(atArrayStart && part == 0)
        // After a fault: the comma before the next element may be missing (the fault is quarantined already).
        var afterFault = false
        let partEnd = boundaries[part + 1]
        // The fast path's view of each record, its room kept from one to the next.
        var scanned = AccountBytes()

        func position(_ offset: Int, line: Int) -> SourcePosition {
            SourcePosition(file: path, line: line, byteOffset: baseOffset + Int64(offset))
        }

        while true {
            cursor.skipWhitespace()
            if cursor.atEnd { break }
            let byte = buffer[cursor.position]
            if closed {
                each(fatal(position(cursor.position, line: baseLine + cursor.newlines), "unexpected \(cursor.describe(byte)) after the closing ]}"))
                return
            }
            if byte == UInt8(ascii: ",") && (expectComma || afterFault) {
                cursor.position += 1
                expectComma = false
                afterFault = false
                continue
            }
            if afterFault {
                expectComma = false
                afterFault = false
            }
            if byte == UInt8(ascii: "]") {
                cursor.position += 1
                do throws(JSONCursor.SyntaxError) {
                    try cursor.expect(UInt8(ascii: "}"))
                } catch {
                    let where_ = position(cursor.position, line: baseLine + cursor.newlines)
                    // Cut short after the array, like a file cut inside it: every account was read, so it is quarantined the same way.
                    if error.atEnd && lastPart {
                        each(.malformed(QuarantineEntry(position: where_, localId: nil, field: "file", reason: "the file ends before the closing } (truncated?)")))
                    } else {
                        each(fatal(where_, "expected } after the users array: \(error.message)"))
                    }
                    return
                }
                closed = true
                continue
            }
            let startOffset = cursor.position
            let startLine = baseLine + cursor.newlines
            if type(of: fastPath).enabled, byte == UInt8(ascii: "{"), !expectComma {
                let start = cursor
                scanned.reset()
                if (try? AccountJSONDecoder.scanPlain(&cursor, into: &scanned)) == true {
                    let verdict = fastPath.verdict(scanned)
                    if case .plain(let account) = verdict {
                        plain(PlainRecord(account: account, localId: scanned.localId, file: path, line: startLine, byteOffset: baseOffset + Int64(startOffset)))
                        expectComma = true
                        continue
                    }
                    // Read whole: the full path's account is made from the bytes, not read again.
                    if scanned.complete {
                        each(.account(AccountJSONDecoder.account(from: scanned), position(startOffset, line: startLine), normalized: verdict.skipsNormalize))
                        expectComma = true
                        continue
                    }
                }
                // The full decoder reads it again from its start, and decides.
                cursor = start
            }
            do throws(JSONCursor.SyntaxError) {
                if byte != UInt8(ascii: "{") {
                    var error = cursor.fail("expected a user object, found \(Self.kind(of: byte, describedBy: cursor))")
                    // A comma too many is the separator's fault, no account's.
                    if byte == UInt8(ascii: ",") { error.field = "separator" }
                    // A value that is no object (a number, null, a list), ending where an element ends: quarantined
                    // alone, and the reading goes on after it (found by the line heuristic below, the account after it
                    // was lost with it). A string followed by ':' is an account that lost its '{': the heuristic's.
                    var element = cursor
                    do {
                        try element.skipValue()
                        element.skipWhitespace()
                    } catch _ { throw error }
                    guard element.atEnd || buffer[element.position] == UInt8(ascii: ",") || buffer[element.position] == UInt8(ascii: "]") else {
                        throw error
                    }
                    each(.malformed(QuarantineEntry(position: position(startOffset, line: startLine), localId: nil, field: error.field,
                                                    reason: "\(error.message) (line \(startLine))")))
                    cursor = element
                    afterFault = true
                    continue
                }
                if expectComma {
                    // The comma is missing, the account whole: it is read, and the fault quarantined on its own.
                    each(.malformed(QuarantineEntry(position: position(startOffset, line: startLine), localId: nil, field: "separator",
                                                    reason: "expected ',' between user objects (line \(startLine))")))
                    expectComma = false
                }
                let decoded = try AccountJSONDecoder.decode(&cursor, normalize: normalize)
                let where_ = position(startOffset, line: startLine)
                switch consume decoded {
                case .success(let account): each(.account(account, where_))
                case .failure(let issue):
                    let uid = Self.peekLocalId(buffer, from: startOffset, to: cursor.position)
                    each(.malformed(QuarantineEntry(position: where_, localId: uid, issue: issue)))
                }
                expectComma = true
            } catch {
                let errorLine = baseLine + cursor.newlines
                let where_ = position(startOffset, line: startLine)
                // Looked for from the broken element's start, not from the fault: a list or value left open reads
                // the accounts after it as its own, and the fault is found far below (or at the part's end).
                let next = exportLayout ? Self.nextAccount(buffer, after: startOffset, end: partEnd) : nil
                // No account starts after it in this part: the next part starts with one.
                let resume = next ?? (exportLayout && !lastPart ? partEnd : nil)
                // The id is looked for up to where reading goes on: an account swallowed by a fault before it (a
                // missing comma) is named, not only the line of the fault.
                let uid = Self.peekLocalId(buffer, from: startOffset, to: resume ?? min(cursor.position + 1, partEnd))
                if error.atEnd && lastPart && next == nil {
                    each(.malformed(QuarantineEntry(position: where_, localId: uid, field: error.field, reason: "the file ends inside this account (truncated)")))
                    // And the file's own row, as for a file cut between accounts: the report then says the input ends early.
                    each(.malformed(QuarantineEntry(position: position(error.position, line: errorLine), localId: nil, field: "file",
                                                    reason: "the file ends inside an account (truncated?)")))
                    return
                }
                guard let resume else {
                    each(fatal(position(error.position, line: errorLine), "\(error.field): \(error.message); cannot find where the next account starts"))
                    return
                }
                each(.malformed(QuarantineEntry(
                    position: where_, localId: uid, field: error.field, reason: "\(error.message) (line \(errorLine))")))
                // Counted from the element's start: the resume point may lie before the fault.
                cursor.newlines = startLine - baseLine + Newlines.count(UnsafeRawBufferPointer(buffer), startOffset..<resume)
                cursor.position = resume
                // A comma before the next account is taken, and a missing one forgiven (`afterFault`).
                afterFault = true
            }
        }
        if lastPart && !closed {
            let entry = QuarantineEntry(position: position(cursor.position, line: baseLine + cursor.newlines), localId: nil, field: "file", reason: "the file ends before the closing ]} (truncated?)")
            each(.malformed(entry))
        }
    }

    private func fatal(_ position: SourcePosition, _ message: String) -> DecodedRecord {
        .fatal(InputError(path: path, position: position, message: message))
    }

    /// Where reading goes on after a fault in the element that begins at `element`, in the export's layout (where only
    /// an account's own braces start a line): just past the first `}` that starts a line after it (the end of a
    /// broken account), or at the first `{` that starts a line when it comes first (the next account, after one that
    /// lost its closing `}`, or text that is no value).
    static func nextAccount(_ buffer: UnsafeBufferPointer<UInt8>, after element: Int, end: Int) -> Int? {
        var index = element
        while index + 1 < end {
            if buffer[index] == 0x0A {
                if buffer[index + 1] == UInt8(ascii: "}") { return index + 2 }
                if buffer[index + 1] == UInt8(ascii: "{") { return index + 1 }
            }
            index += 1
        }
        return nil
    }

    /// What an element that is no object is, by its first byte: "a number", "null", …
    static func kind(of byte: UInt8, describedBy cursor: JSONCursor) -> String {
        switch byte {
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): "a number"
        case UInt8(ascii: "\""): "a string"
        case UInt8(ascii: "["): "a list"
        case UInt8(ascii: "n"): "null"
        case UInt8(ascii: "t"), UInt8(ascii: "f"): "true or false"
        default: cursor.describe(byte)
        }
    }

    /// The `localId` of a broken object, when it can be seen, so the quarantine names the account.
    static func peekLocalId(_ buffer: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> String? {
        let needle = Array("\"localId\"".utf8)
        var index = start
        while index + needle.count < end {
            if buffer[index] == needle[0] && Array(buffer[index..<index + needle.count]) == needle {
                var cursor = JSONCursor(bytes: buffer, start: index + needle.count, end: end)
                guard (try? cursor.expect(UInt8(ascii: ":"))) != nil, let value = try? cursor.string() else { return nil }
                return value.isEmpty ? nil : value
            }
            index += 1
        }
        return nil
    }
}
