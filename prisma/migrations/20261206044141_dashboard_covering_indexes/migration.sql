-- CreateIndex
CREATE INDEX "Evaluation_sessionId_success_score_idx" ON "Evaluation"("sessionId", "success", "score");

-- CreateIndex
CREATE INDEX "Session_studyId_status_id_taskId_policyVersionId_reward_act_idx" ON "Session"("studyId", "status", "id", "taskId", "policyVersionId", "reward", "activeMs", "startedAt", "endedAt");

-- CreateIndex
CREATE INDEX "Session_goldSourceId_policyVersionId_taskId_guildId_id_idx" ON "Session"("goldSourceId", "policyVersionId", "taskId", "guildId", "id");
