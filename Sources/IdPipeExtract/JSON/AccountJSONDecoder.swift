import IdPipeCore
#if canImport(Glibc)
import Glibc
#endif

/// Decodes one user object of an `auth:export` JSON file (or an Identity Toolkit `UserInfo`).
/// A syntax error throws (the record is cut short); a bad value is returned as the record's issue.
enum AccountJSONDecoder {
    static func decode(_ cursor: inout JSONCursor) throws(JSONCursor.SyntaxError) -> Result<Account, RecordIssue> {
        var account = Account(localId: "")
        var issue: RecordIssue?
        var sawLocalId = false
        func note(_ field: String, _ reason: String) {
            if issue == nil { issue = RecordIssue(field: field, reason: reason) }
        }
        cursor.enterRecord()
        try cursor.expect(UInt8(ascii: "{"))
        if try cursor.peek() == UInt8(ascii: "}") {
            cursor.position += 1
            return .failure(RecordIssue(field: "localId", reason: "is missing or empty"))
        }
        while true {
            let key = try cursor.key()
            try cursor.expect(UInt8(ascii: ":"))
            cursor.currentKey = key
            switch key.count {
            case 4 where matches(key, "salt"): account.salt = try cursor.stringOrNull()
            case 5 where matches(key, "email"): account.email = try cursor.stringOrNull()
            case 7 where matches(key, "localId"):
                account.localId = try cursor.stringOrNull() ?? ""
                sawLocalId = true
            case 7 where matches(key, "mfaInfo"): account.mfaInfoJSON = try cursor.skipValue(capture: true)
            case 8 where matches(key, "photoUrl"): account.photoUrl = try cursor.stringOrNull()
            case 8 where matches(key, "disabled"): account.disabled = try cursor.bool()
            case 9 where matches(key, "createdAt"): account.createdAt = try timestamp(&cursor, note: note)
            case 11 where matches(key, "displayName"): account.displayName = try cursor.stringOrNull()
            case 11 where matches(key, "phoneNumber"): account.phoneNumber = try cursor.stringOrNull()
            case 11 where matches(key, "lastLoginAt"): account.lastSignedInAt = try timestamp(&cursor, note: note)
            case 12 where matches(key, "passwordHash"): account.passwordHash = try cursor.stringOrNull()
            case 13 where matches(key, "emailVerified"): account.emailVerified = try cursor.bool()
            case 14 where matches(key, "lastSignedInAt"): account.lastSignedInAt = try timestamp(&cursor, note: note)
            case 16 where matches(key, "customAttributes"): account.customAttributes = try cursor.stringOrNull()
            case 16 where matches(key, "providerUserInfo"): account.providers = try providers(&cursor, of: account, note: note)
            default: try cursor.skipValue()
            }
            if try cursor.peek() == UInt8(ascii: ",") {
                cursor.position += 1
                continue
            }
            cursor.currentKey = nil
            try cursor.expect(UInt8(ascii: "}"))
            break
        }
        if let issue { return .failure(issue) }
        if !sawLocalId { return .failure(RecordIssue(field: "localId", reason: "is missing or empty")) }
        return .success(account)
    }

    /// A provider's email, name and photo mostly repeat the account's (decoded before them in an export): those are
    /// shared, not copied.
    private static func providers(_ cursor: inout JSONCursor, of account: Account, note: (String, String) -> Void) throws(JSONCursor.SyntaxError)
        -> [ProviderLink] {
        var links: [ProviderLink] = []
        try cursor.expect(UInt8(ascii: "["))
        if try cursor.peek() == UInt8(ascii: "]") {
            cursor.position += 1
            return links
        }
        while true {
            let index = links.count
            // Filled in place: a link built on its own was copied into the array (a retain and release of each string).
            links.append(ProviderLink(providerId: "", rawId: ""))
            cursor.providerIndex = index
            cursor.currentKey = nil
            try cursor.expect(UInt8(ascii: "{"))
            var sawRawId = false
            if try cursor.peek() != UInt8(ascii: "}") {
                while true {
                    let key = try cursor.key()
                    try cursor.expect(UInt8(ascii: ":"))
                    cursor.currentKey = key
                    switch key.count {
                    case 5 where matches(key, "rawId"):
                        links[index].rawId = try cursor.stringOrNull() ?? ""
                        sawRawId = true
                    case 5 where matches(key, "email"): links[index].email = try cursor.stringOrNull(sameAs: account.email)
                    case 8 where matches(key, "photoUrl"): links[index].photoUrl = try cursor.stringOrNull(sameAs: account.photoUrl)
                    case 10 where matches(key, "providerId"): links[index].providerId = try cursor.stringOrNull() ?? ""
                    case 11 where matches(key, "displayName"): links[index].displayName = try cursor.stringOrNull(sameAs: account.displayName)
                    default: try cursor.skipValue()
                    }
                    if try cursor.peek() == UInt8(ascii: ",") {
                        cursor.position += 1
                        continue
                    }
                    break
                }
            }
            cursor.currentKey = nil
            try cursor.expect(UInt8(ascii: "}"))
            if !sawRawId { note("providerUserInfo[\(index)].rawId", "is missing") }
            cursor.providerIndex = nil
            if try cursor.peek() == UInt8(ascii: ",") {
                cursor.position += 1
                continue
            }
            try cursor.expect(UInt8(ascii: "]"))
            return links
        }
    }

    /// Epoch milliseconds, as a decimal string (the export's form) or a number.
    private static func timestamp(_ cursor: inout JSONCursor, note: (String, String) -> Void) throws(JSONCursor.SyntaxError) -> Int64? {
        let byte = try cursor.peek()
        if byte == UInt8(ascii: "\""), let value = cursor.quotedDigits() { return value }
        let text: String?
        if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "n") {
            text = try cursor.stringOrNull()
        } else {
            text = try cursor.numberText()
        }
        guard let text, !text.isEmpty else { return nil }
        guard let value = Int64(text) else {
            note(cursor.field, "'\(text)' is not a timestamp in epoch milliseconds")
            return nil
        }
        return value
    }

    @inline(__always)
    private static func matches(_ key: UnsafeBufferPointer<UInt8>, _ word: StaticString) -> Bool {
        memcmp(key.baseAddress!, word.utf8Start, key.count) == 0
    }
}
